"""The table from opcode to semantics: each family module registers compile functions
`compile(ins, prog, pc) -> op(W, m) -> control` under an opcode prefix ("add", "cp.async", "wgmma.mma_async").
Lookup takes the longest registered prefix of the opcode's dotted parts. The families import this module and
register on import; the package (ops/__init__.py) imports every family, so `tcemu.ptx.ops.lookup` sees them all."""
from typing import Callable, Dict

from ..errors import PtxUnsupported
from ..parser import Instruction

OPCODES: Dict[str, Callable] = {}


def register(*prefixes: str):
    def deco(fn):
        for p in prefixes:
            if p in OPCODES:   # two families claiming one prefix: the later would silently shadow the earlier
                raise AssertionError(f"opcode prefix {p!r} registered twice ({OPCODES[p].__module__}, {fn.__module__})")
            OPCODES[p] = fn
        return fn
    return deco


def lookup(ins: Instruction) -> Callable:
    parts = ins.opcode.split(".")
    for n in range(len(parts), 0, -1):
        fn = OPCODES.get(".".join(parts[:n]))
        if fn is not None:
            return fn
    raise PtxUnsupported(ins.opcode, f"instruction not supported by tcemu's interpreter ({ins.where()})")
