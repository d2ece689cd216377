"""The PTX interpreter's opcode table (tcemu/ptx/ops/registry.py): every family registers there on import, one
prefix names one compile function, and lookup takes the longest registered prefix."""
import pytest

from tcemu.ptx import parser as P
from tcemu.ptx.errors import PtxUnsupported
from tcemu.ptx.ops import OPCODES, lookup, register
from tcemu.ptx.ops.tcgen05 import alloc, commit, cp, ldst, mma


def _ins(opcode):
    return P.Instruction(opcode, (), None, 1, 1)


def test_every_family_registers():
    modules = {fn.__module__.rsplit(".", 1)[-1] for fn in OPCODES.values()}
    assert {"integer", "floating", "data", "memory_ops", "control", "wgmma", "mbarrier", "bulk", "calls"} <= modules
    for family in (alloc, commit, cp, ldst, mma):   # the tcgen05 package, one module per part
        assert family.__name__.rsplit(".", 1)[-1] in modules


def test_lookup_takes_the_longest_prefix():
    assert lookup(_ins("cp.async.mbarrier.arrive.b64")).__module__.endswith(".mbarrier")
    assert lookup(_ins("cp.async.ca.shared.global")).__module__.endswith(".cp_async")
    assert lookup(_ins("tcgen05.mma.cta_group::1.kind::f16")).__module__.endswith(".tcgen05.mma")
    with pytest.raises(PtxUnsupported, match="not supported by tcemu's interpreter"):
        lookup(_ins("nosuchop.b32"))


def test_a_prefix_registers_once():
    with pytest.raises(AssertionError, match="registered twice"):
        register("add")(lambda ins, prog, pc: None)
    assert OPCODES["add"].__module__.endswith(".integer")
