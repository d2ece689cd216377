"""call and ret of device functions (PTX ISA 9.7.12.8-9.7.12.10), and the CUDA runtime's device-side builtins a
compiled kernel calls: vprintf (printf), __assertfail (assert), malloc and free (heap.py).

A called .func's body is merged once into the kernel's code (program.py: its registers and variables renamed
"name::..."); its parameters and return values live in each thread's frame. `call` copies the argument
variables into the callee's parameters, pushes a frame (return pc, calling lanes) on each calling lane's stack
and jumps (frames.py); a callee's `ret` waits until every calling lane has reached a ret of that function,
copies the return values back and resumes the lanes after the call together.

Indirect calls (`call (r), %rd, (a), proto;`, PTX ISA 9.7.12.8 with 10.3 .callprototype / 10.4 .calltargets:
function pointers, virtual functions) go through the code addresses of callgraph.py; lanes with different
targets run as the paths of a divergent branch and meet again after the call (indirect.py). Recursion, direct
or mutual, saves the callee's registers and frame bytes at each call of a function on a call-graph cycle and
restores them at its ret; a thread's stack holds MAX_CALL_DEPTH (1024) frames, one more is a KernelFault
"call stack overflow".
"""
import re
import struct

import numpy as np

from .. import parser as P
from ..callgraph import call_parts
from ..errors import KernelFault, PtxSyntaxError, PtxUnsupported
from ..heap import heap
from ..memory import LOCAL_WINDOW, WINDOW_SIZE
from ..program import call_target
from .common import mask_array, where
from .frames import c_return, enter_call, frame_slot, plan_call  # noqa: F401 (control.py imports c_return here)
from .indirect import indirect_call
from .memory_ops import access
from .registry import register

MAX_STRING = 4096


@register("call")
def c_call(ins, prog, pc):
    rets, target, args, label = call_parts(ins)
    wh = where(ins)
    if any(isinstance(o, (P.Reg, P.Imm)) for o in rets + args):
        raise PtxUnsupported(ins.opcode, f"register or constant call arguments (non-ABI calls) are not modelled "
                                         f"({ins.where()})")
    if isinstance(target, P.Reg):
        return indirect_call(ins, prog, pc, rets, target, args, label)
    name = call_target(ins)
    builtin = BUILTINS.get(name)
    if builtin is None and name not in prog.functions:
        raise PtxUnsupported(ins.opcode, f"call to {name}, an external function tcemu does not provide "
                                         f"({ins.where()}; it models vprintf, __assertfail, malloc and free)")
    if builtin is None and prog.functions[name].entry:
        raise PtxSyntaxError(ins.line, ins.col, f"call to {name}, a kernel (.entry): only .func can be called")
    ret_slots = [frame_slot(prog, r, ins) for r in rets]
    arg_slots = [frame_slot(prog, a, ins) for a in args]
    if builtin is not None:
        return builtin(ins, prog, wh, ret_slots, arg_slots)
    plan = plan_call(prog, ins, name, arg_slots, ret_slots)

    def op(W, m):
        if m is None or (m is W.live and W.lane_pc is None):   # converged (machine.py passes W.live itself)
            return enter_call(W, W.live.copy(), pc, plan, wh, True)
        return enter_call(W, mask_array(m) & W.live, pc, plan, wh)
    return op


# ------------------------------------------------------------------------------------------------ builtins

def _arg(W, lane, slot, nbytes=8) -> int:
    off, _ = slot
    return int.from_bytes(W.local.data[lane, off:off + nbytes].tobytes(), "little")


def _read_string(W, addr: int, wh: str) -> str:
    """A NUL-terminated string at a generic address (global/const data, or the thread's local memory)."""
    out = bytearray()
    for i in range(MAX_STRING):
        b = access(W, "generic", np.array([addr + i], np.uint64), W.tid[:1], 1, wh)[0, 0]
        if b == 0:
            return out.decode("utf-8", errors="replace")
        out.append(int(b))
    raise KernelFault(wh, f"string at {addr:#x} is longer than {MAX_STRING} bytes (no terminating NUL?)")


def _local_reader(W, lane, addr, wh):
    """Bytes of the printf argument buffer: a generic address into this thread's local memory."""
    if not LOCAL_WINDOW <= addr < LOCAL_WINDOW + WINDOW_SIZE:
        raise KernelFault(wh, f"printf argument buffer {addr:#x} is not in local memory")
    base = addr - LOCAL_WINDOW

    def read(off, n):
        if base + off + n > W.local.size:
            raise KernelFault(wh, "printf reads past the thread's local frame (more % conversions than arguments?)")
        return int.from_bytes(W.local.data[lane, base + off:base + off + n].tobytes(), "little")
    return read


def format_printf(fmt: str, read, string) -> str:
    """C printf formatting of `fmt` with arguments packed as the CUDA compiler packs them: each aligned to its
    size; ints 4 bytes (8 with l / ll / z / j), floats promoted to 8-byte doubles, pointers and %s 8 bytes."""
    out, off = [], 0
    pos = 0
    for m in re.finditer(r"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d+))?(hh|h|ll|l|z|j|t|L)?([diouxXeEfFgGaAcspn%])", fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        flags, width, prec, length, conv = m.groups()
        if conv == "%":
            out.append("%")
            continue
        if width == "*" or prec == "*":
            raise ValueError("* widths")
        spec = "%" + (flags or "") + (width or "") + ("." + prec if prec is not None else "")
        if conv in "diouxXc":
            n = 8 if length in ("l", "ll", "z", "j", "t") else 4
            off = (off + n - 1) // n * n
            v = read(off, n)
            off += n
            if conv in "di" and v >= 1 << (8 * n - 1):
                v -= 1 << (8 * n)
            out.append((spec + ("d" if conv == "i" else conv)) % (chr(v & 0xFF) if conv == "c" else v)
                       if conv != "c" else (spec + "c") % chr(v & 0xFF))
        elif conv in "eEfFgGaA":
            off = (off + 7) // 8 * 8
            v = struct.unpack("<d", read(off, 8).to_bytes(8, "little"))[0]
            off += 8
            out.append(float.hex(v) if conv in "aA" else (spec + conv) % v)
        elif conv in "sp":
            off = (off + 7) // 8 * 8
            v = read(off, 8)
            off += 8
            out.append((spec + "s") % string(v) if conv == "s" else f"0x{v:x}")
        else:
            raise ValueError(f"%{conv}")
    out.append(fmt[pos:])
    return "".join(out)


def _vprintf(ins, prog, wh, rets, args):
    if len(args) != 2:
        raise PtxSyntaxError(ins.line, ins.col, "vprintf takes a format and an argument buffer")

    def op(W, m):
        act = mask_array(m) & W.live
        launch = W.cta.launch
        for lane in np.flatnonzero(act):
            fmt = _read_string(W, _arg(W, lane, args[0]), wh)
            buf = _arg(W, lane, args[1])
            read = _local_reader(W, lane, buf, wh) if buf else (lambda off, n: 0)
            try:
                text = format_printf(fmt, read, lambda a: _read_string(W, a, wh))
            except (ValueError, TypeError, OverflowError) as e:
                raise KernelFault(wh, f"printf format {fmt!r}: {e}") from None
            launch.printf(text)
        for off, size in rets:  # vprintf returns the number of arguments; tcemu returns 0
            W.local.data[act, off:off + size] = 0
    return op


def _assertfail(ins, prog, wh, rets, args):
    if len(args) != 5:
        raise PtxSyntaxError(ins.line, ins.col, "__assertfail takes message, file, line, function, char size")

    def op(W, m):
        act = mask_array(m) & W.live
        lane = int(np.flatnonzero(act)[0])
        msg = _read_string(W, _arg(W, lane, args[0]), wh)
        file = _read_string(W, _arg(W, lane, args[1]), wh)
        line = _arg(W, lane, args[2], 4)
        func = _read_string(W, _arg(W, lane, args[3]), wh)
        raise KernelFault(wh, f"{file}:{line}: {func}: CTA {W.cta.ctaid}, thread {int(W.tid[lane])}: "
                              f"Assertion `{msg}` failed.")
    return op


def _malloc(ins, prog, wh, rets, args):
    if len(args) != 1 or len(rets) != 1:
        raise PtxSyntaxError(ins.line, ins.col, "malloc takes a size and returns a pointer")
    off = rets[0][0]

    def op(W, m):
        act = mask_array(m) & W.live
        h = heap(W.cta.launch)
        for lane in np.flatnonzero(act):   # every calling thread gets a block of its own
            ptr = h.malloc(_arg(W, lane, args[0]), f"thread {int(W.tid[lane])} of CTA {W.cta.ctaid}")
            W.local.data[lane, off:off + 8] = np.frombuffer(struct.pack("<Q", ptr), np.uint8)
    return op


def _free(ins, prog, wh, rets, args):
    if len(args) != 1 or rets:
        raise PtxSyntaxError(ins.line, ins.col, "free takes a pointer")

    def op(W, m):
        act = mask_array(m) & W.live
        h = heap(W.cta.launch)
        for lane in np.flatnonzero(act):
            h.free(_arg(W, lane, args[0]), f"free() by thread {int(W.tid[lane])} of CTA {W.cta.ctaid}", wh)
    return op


BUILTINS = {"vprintf": _vprintf, "__assertfail": _assertfail, "malloc": _malloc, "free": _free}
