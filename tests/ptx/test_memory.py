"""tcemu.ptx memory spaces: global bounds and alignment faults, shared bounds and unwritten bytes, local frames,
param/const reads, generic addressing and cvta (PTX ISA 5.1, 9.7.9.20), vector and sub-word ld/st (9.7.9.8,
9.7.9.11), atom/red (9.7.13.5-6), write-back of device buffers; cp.async with commit/wait groups
(9.7.9.25.3); ldmatrix/stmatrix against the fragment layout of PTX 9.7.14.5.15-16."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tcemu.ptx as ptx
from tcemu.ptx.errors import HazardError, MemoryFault
from tcemu.ptx.guardscan import guard_keys as _guard_keys
from tcemu.ptx.memory import MIXED, SharedWindow, _any_at, _any_unfenced
from tcemu.smem import SharedMemory

from ptxkit import entry, run

T = np.arange(32)
SMEM = ".shared .align 16 .b8 smem[4096];\n"
DYN = ".extern .shared .align 16 .b8 dyn[];\n"


# ------------------------------------------------------------------------------------------------ global

def test_global_out_of_bounds_write_names_thread_address_and_distance():
    # out has 32 words; thread t writes word t + 1, so thread 31 lands on the first byte past the end
    out = np.zeros(32, np.uint32)
    with pytest.raises(MemoryFault) as e:
        run("  st.global.u32 [%rd1+4], %r0;\n  ret;\n", out=out)
    msg = str(e.value)
    assert "st.global.u32 [%rd1+4], %r0" in msg and "warp 0" in msg
    assert "thread 31 accesses 4 bytes at global address" in msg and "0 bytes past the end of 'out' (128 bytes" in msg


def test_global_out_of_bounds_read_before_the_buffer():
    body = "  sub.s64 %rd2, %rd1, 8;\n  ld.global.u32 %r2, [%rd2];\n  st.global.u32 [%rd1], %r2;\n  ret;\n"
    with pytest.raises(MemoryFault) as e:
        run(body)
    # threads 0 and 1 read 8 and 4 bytes before out: the first faulting lane is named
    assert "thread 0 accesses 4 bytes" in str(e.value) and "8 bytes before 'out'" in str(e.value)


def test_global_access_straddling_the_end():
    # a 16-byte vector load at byte 128 of a 136-byte buffer: in bounds at its start, 8 bytes past at its end
    with pytest.raises(MemoryFault) as e:
        run("  ld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd0+128];\n  ret;\n", out=np.zeros(34, np.uint32))
    assert "thread 0 accesses 16 bytes" in str(e.value) and \
        "starts 128 bytes into 'out' (136 bytes at" in str(e.value) and "runs 8 bytes past its end" in str(e.value)


def test_global_far_out_of_bounds():
    with pytest.raises(MemoryFault) as e:
        run("  ld.global.u32 %r2, [%rd1+1048576];\n  ret;\n")   # 1 MiB past: in the guard gap, not another buffer
    assert "outside every allocation" in str(e.value)


def test_null_pointer_and_read_only_buffer():
    text = entry("  ld.param.u64 %rd5, [src];\n  ld.global.u32 %r2, [%rd5];\n  st.global.u32 [%rd1], %r2;\n"
                 "  ret;\n", params=".param .u64 out, .param .u64 src")
    out = np.zeros(32, np.uint32)
    with pytest.raises(MemoryFault):
        ptx.load(text).launch("k", grid=1, block=32, args=[out, None])
    ro = np.arange(32, dtype=np.uint32)
    ro.setflags(write=False)
    ptx.load(text).launch("k", grid=1, block=32, args=[out, ro])        # reading a read-only array is fine
    assert (out == 0).all()
    with pytest.raises(MemoryFault) as e:
        ptx.load(text).launch("k", grid=1, block=32, args=[ro, np.arange(32, dtype=np.uint32)])
    assert "read-only 'out'" in str(e.value)


@pytest.mark.parametrize("ins,offset", [("ld.global.u32 %r2, [%rd2];", 2), ("ld.global.u16 %h2, [%rd2];", 1),
                                        ("st.global.u32 [%rd2], %r0;", 1), ("ld.global.v2.u32 {%r2, %r3}, [%rd2];", 4),
                                        ("st.global.v4.u32 [%rd2], {%r0, %r0, %r0, %r0};", 8),
                                        ("ld.global.u64 %rd3, [%rd2];", 4)])
def test_misaligned_global_access(ins, offset):
    with pytest.raises(MemoryFault) as e:
        run(f"  add.s64 %rd2, %rd0, {offset};\n  {ins}\n  ret;\n", out_words=256)
    assert "not aligned" in str(e.value)


def test_vector_and_subword_loads_and_stores():
    # src holds bytes 0x80 + i (so bytes >= 0x80 are negative as s8); thread t reads at byte 8t:
    #   ld.s8 -> sign-extended, ld.u8 -> zero-extended, ld.s16 / ld.u16, ld.v2.u32, ld.v4.u16 (4 halves)
    body = """
  ld.param.u64 %rd5, [src];
  mul.wide.u32 %rd6, %r0, 8;
  add.s64 %rd5, %rd5, %rd6;
  ld.global.s8 %r2, [%rd5+1];
  ld.global.u8 %r3, [%rd5+1];
  ld.global.s16 %r4, [%rd5+2];
  ld.global.u16 %r5, [%rd5+2];
  ld.global.v2.u32 {%r6, %r7}, [%rd5];
  ld.global.v4.u16 {%h1, %h2, %h3, %h4}, [%rd5];
  cvt.u32.u16 %r8, %h4;
  mul.wide.u32 %rd7, %r0, 32;
  add.s64 %rd7, %rd0, %rd7;
  st.global.v4.u32 [%rd7], {%r2, %r3, %r4, %r5};
  st.global.v2.u32 [%rd7+16], {%r6, %r7};
  st.global.u32 [%rd7+24], %r8;
  st.global.u8 [%rd7+28], %r0;          // the low byte of a 32-bit register
  st.global.u16 [%rd7+30], %r2;         // the low half of the sign-extended s8
  ret;
"""
    src = (np.arange(256) * 37 % 256).astype(np.uint8)
    out = np.zeros(32 * 8, np.uint32)
    text = entry(body, params=".param .u64 out, .param .u64 src")
    ptx.load(text).launch("k", grid=1, block=32, args=[out, src])
    out = out.reshape(32, 8)
    for t in range(32):
        b = [int(x) for x in src[8 * t:8 * t + 8]]
        s8 = b[1] - 256 if b[1] >= 128 else b[1]
        h = b[2] | b[3] << 8
        s16 = h - 65536 if h >= 32768 else h
        w0, w1 = int.from_bytes(bytes(b[:4]), "little"), int.from_bytes(bytes(b[4:]), "little")
        assert list(out[t, :7]) == [s8 & 0xFFFFFFFF, b[1], s16 & 0xFFFFFFFF, h, w0, w1, b[6] | b[7] << 8]
        assert int(out[t, 7]) == t | (s8 & 0xFFFF) << 16


def test_write_back_of_non_contiguous_arrays():
    base = np.full(64, 7, np.uint32)
    view = base[::2]                     # 32 words, stride 8 bytes: copied in, then written back
    run("  mad.lo.u32 %r2, %r0, 3, 1;\n  st.global.u32 [%rd1], %r2;\n  ret;\n", out=view)
    assert list(base[::2]) == list(3 * T + 1) and (base[1::2] == 7).all()
    f = np.asfortranarray(np.zeros((4, 8), np.uint32))     # written in C order of its elements
    run("  st.global.u32 [%rd1], %r0;\n  ret;\n", out=f)
    assert np.array_equal(f, np.arange(32).reshape(4, 8)) and f.flags.f_contiguous


def test_write_back_happens_even_when_the_kernel_faults():
    base = np.zeros(64, np.uint32)
    view = base[::2]
    with pytest.raises(ptx.KernelFault):
        run("  st.global.u32 [%rd1], %r0;\n  setp.eq.u32 %p1, %r0, 31;\n  @%p1 trap;\n  ret;\n", out=view)
    assert list(base[::2]) == list(T)       # what the kernel wrote before the fault is visible, like a device buffer


# ------------------------------------------------------------------------------------------------ shared

def test_shared_outside_the_allocation():
    # 64 dynamic bytes at 0x400: thread t writes word t, so threads 16-31 fall outside [0x400, 0x440)
    body = "  mov.u32 %r2, dyn;\n  shl.b32 %r3, %r0, 2;\n  add.u32 %r2, %r2, %r3;\n  st.shared.u32 [%r2], %r0;\n  ret;\n"
    with pytest.raises(MemoryFault) as e:
        run(body, before=DYN, shared_bytes=64)
    assert "thread 16 writes 4 bytes at shared address 0x440, outside the kernel's shared memory [0x400, 0x440)" \
        in str(e.value)
    run(body, before=DYN, shared_bytes=128)
    with pytest.raises(MemoryFault) as e:      # the reserved first KiB is not the kernel's either
        run("  st.shared.u32 [16], %r0;\n  ret;\n", before=DYN, shared_bytes=128)
    assert "0x10" in str(e.value)


def test_unwritten_shared_memory():
    body = "  mov.u32 %r2, smem;\n  shl.b32 %r3, %r0, 2;\n  add.u32 %r2, %r2, %r3;\n" \
           "  setp.ne.u32 %p1, %r0, 5;\n  @%p1 st.shared.u32 [%r2], %r0;\n  ld.shared.u32 %r4, [%r2];\n" \
           "  st.global.u32 [%rd1], %r4;\n  ret;\n"
    with pytest.raises(MemoryFault) as e:
        run(body, before=SMEM)
    assert "thread 5 reads shared address" in str(e.value) and "nothing wrote" in str(e.value)
    out = run(body, before=SMEM, zero_init_shared=True)
    assert list(out) == [t if t != 5 else 0 for t in T]


def test_shared_vector_and_subword():
    body = """
  mov.u32 %r2, smem;
  shl.b32 %r3, %r0, 4;
  add.u32 %r2, %r2, %r3;
  add.u32 %r5, %r0, 0x8070;
  st.shared.v4.u32 [%r2], {%r0, %r5, %r0, %r5};
  ld.shared.s8 %r6, [%r2+5];
  ld.shared.u16 %r7, [%r2+4];
  ld.shared.v2.u32 {%r8, %r9}, [%r2+8];
  add.u32 %r6, %r6, %r7;
  add.u32 %r6, %r6, %r8;
  add.u32 %r6, %r6, %r9;
  st.global.u32 [%rd1], %r6;
  ret;
"""
    out = run(body, before=SMEM)
    # byte 5 of the record is 0x80 (s8: -128); u16 at byte 4 is 0x8070 + t; then t and 0x8070 + t
    want = [(-128 + (0x8070 + t) + t + (0x8070 + t)) & 0xFFFFFFFF for t in T]
    assert list(out) == want


# ------------------------------------------------------------------------------------------------ local, param, const, generic

LOCAL = """
  .local .align 8 .b8 frame[64];
  mov.u64 %rd2, frame;
  mul.wide.u32 %rd3, %r0, 4;
  rem.u32 %r2, %r0, 16;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd2, %rd3;
  mad.lo.u32 %r3, %r0, 10, 3;
  st.local.u32 [%rd4], %r3;
  st.local.u32 [frame+60], %r0;
  ld.local.u32 %r4, [%rd4];
  ld.local.u32 %r5, [frame+60];
  add.u32 %r4, %r4, %r5;
  st.global.u32 [%rd1], %r4;
  ret;
"""


def test_local_memory_is_per_thread():
    # every thread writes the same local offsets; each reads back its own values. For t % 16 == 15 the word at
    # 4 * (t % 16) = 60 is overwritten by the second store (t), so both loads return t
    out = run(LOCAL, block=64)
    t = np.arange(64)
    want = np.where(t % 16 == 15, 2 * t, 10 * t + 3 + t)
    assert list(out) == list(want)


def test_local_out_of_frame():
    with pytest.raises(MemoryFault) as e:
        run(LOCAL.replace("[frame+60]", "[frame+64]"))
    assert "outside its 64-byte local frame" in str(e.value)


def test_generic_addressing_of_shared_local_param_global():
    body = """
  .local .align 4 .b8 frame[8];
  // shared through a generic pointer
  mov.u32 %r2, smem;
  shl.b32 %r3, %r0, 2;
  add.u32 %r2, %r2, %r3;
  cvt.u64.u32 %rd2, %r2;
  cvta.shared.u64 %rd3, %rd2;
  add.u32 %r4, %r0, 500;
  st.u32 [%rd3], %r4;
  ld.shared.u32 %r5, [%r2];
  // local through a generic pointer
  mov.u64 %rd4, frame;
  cvta.local.u64 %rd5, %rd4;
  add.u32 %r6, %r0, 7000;
  st.u32 [%rd5+4], %r6;
  ld.local.u32 %r7, [frame+4];
  // the parameter n through a generic pointer
  mov.u64 %rd6, n;
  cvta.param.u64 %rd7, %rd6;
  ld.u32 %r8, [%rd7];
  // global through the generic window (a cvta.to.global'd pointer round trip)
  cvta.global.u64 %rd8, %rd1;
  cvta.to.shared.u64 %rd9, %rd3;
  setp.eq.u64 %p1, %rd9, %rd2;
  isspacep.shared %p2, %rd3;
  isspacep.global %p3, %rd8;
  isspacep.local %p4, %rd3;
  selp.u32 %r9, 1, 0, %p1;
  selp.u32 %r10, 2, 0, %p2;
  selp.u32 %r11, 4, 0, %p3;
  selp.u32 %r12, 8, 0, %p4;
  add.u32 %r9, %r9, %r10;
  add.u32 %r9, %r9, %r11;
  add.u32 %r9, %r9, %r12;
  mul.lo.u32 %r9, %r9, 100000;
  add.u32 %r5, %r5, %r7;
  add.u32 %r5, %r5, %r8;
  add.u32 %r5, %r5, %r9;
  st.u32 [%rd8], %r5;
  ret;
"""
    text = entry(body, params=".param .u64 out, .param .u32 n", before=SMEM)
    out = np.zeros(32, np.uint32)
    ptx.load(text).launch("k", grid=1, block=32, args=[out, 40000])
    assert list(out) == [(t + 500) + (t + 7000) + 40000 + 7 * 100000 for t in T]


def test_param_space_is_read_only():
    with pytest.raises(MemoryFault) as e:
        run("  st.param.u32 [out], %r0;\n  ret;\n")
    assert "read-only param" in str(e.value)


# ------------------------------------------------------------------------------------------------ atomics

ATOM = """
  ld.param.u64 %rd5, [cell];
  rem.u32 %r2, %r0, {groups};
  mul.wide.u32 %rd6, %r2, 4;
  add.s64 %rd5, %rd5, %rd6;
  mad.lo.u32 %r3, %r0, 7, 2;
  {ins}
  st.global.u32 [%rd1], %r4;
  ret;
"""


def _atom(ins, cell, groups=1, block=32):
    text = entry(ATOM.replace("{groups}", str(groups)).replace("{ins}", ins), params=".param .u64 out, .param .u64 cell")
    out = np.zeros(block, np.uint32)
    ptx.load(text).launch("k", grid=1, block=block, args=[out, cell])
    return out


def _serial(op, cell0, vals, extra=None):
    """Lane-order serialisation: lane i sees the value after lanes 0..i-1; returns (olds, final)."""
    old, olds = cell0, []
    for i, v in enumerate(vals):
        olds.append(old)
        old = op(old, v, None if extra is None else extra[i]) & 0xFFFFFFFF
    return olds, old


@pytest.mark.parametrize("name,op", [
    ("add.u32", lambda o, v, c: o + v), ("exch.b32", lambda o, v, c: v), ("and.b32", lambda o, v, c: o & v),
    ("or.b32", lambda o, v, c: o | v), ("xor.b32", lambda o, v, c: o ^ v), ("max.u32", lambda o, v, c: max(o, v)),
    ("min.s32", lambda o, v, c: min(o - (1 << 32) * (o >> 31), v - (1 << 32) * (v >> 31))),
    # PTX 9.7.13.5: inc: old >= b ? 0 : old + 1; dec: old == 0 or old > b ? b : old - 1
    ("inc.u32", lambda o, v, c: 0 if o >= v else o + 1), ("dec.u32", lambda o, v, c: v if o == 0 or o > v else o - 1),
])
def test_atom_global_serialises_in_lane_order(name, op):
    vals = [7 * t + 2 for t in T]
    if name == "min.s32":
        vals = [(v if t % 3 else -v) & 0xFFFFFFFF for t, v in enumerate(vals)]
    if name in ("inc.u32", "dec.u32"):
        vals = [100] * 32
    start = 0xF0F0F0F0 if name in ("and.b32", "or.b32", "xor.b32", "min.s32", "max.u32") else 95
    cell = np.array([start], np.uint32)
    pre = "" if name != "min.s32" else "  and.b32 %r9, %r0, 0x7fffffff;\n  rem.u32 %r9, %r0, 3;\n  setp.eq.u32 %p1, " \
        "%r9, 0;\n  neg.s32 %r8, %r3;\n  selp.b32 %r3, %r8, %r3, %p1;\n"
    mov = "  mov.u32 %r3, 100;\n" if name in ("inc.u32", "dec.u32") else ""
    out = _atom(pre + mov + f"  atom.global.{name} %r4, [%rd5], %r3;", cell)
    olds, final = _serial(op, start, vals)
    assert list(out) == olds and int(cell[0]) == final


def test_atom_cas_and_per_address_groups():
    # 4 cells: lane t adds to cell t % 4; each cell sees its lanes in lane order
    cell = np.array([10, 20, 30, 40], np.uint32)
    out = _atom("  atom.global.add.u32 %r4, [%rd5], %r3;", cell, groups=4)
    for g in range(4):
        lanes = [t for t in T if t % 4 == g]
        olds, final = _serial(lambda o, v, c: o + v, [10, 20, 30, 40][g], [7 * t + 2 for t in lanes])
        assert [int(out[t]) for t in lanes] == olds and int(cell[g]) == final
    # cas: lane t swaps in 7t + 2 only if the cell holds t: only lane 0 (cell 0) and then lane 2 (cell 2) succeed
    cell = np.array([0], np.uint32)
    out = _atom("  atom.global.cas.b32 %r4, [%rd5], %r0, %r3;", cell)
    # lane 0: cell 0 == 0 -> 2; lane 1: 2 != 1; lane 2: 2 == 2 -> 16; then 16 == lane 16 -> 114; no later match
    assert int(out[0]) == 0 and int(out[1]) == 2 and int(out[2]) == 2 and int(out[3]) == 16
    assert int(out[16]) == 16 and int(out[17]) == 114 and int(cell[0]) == 114


def test_atom_shared_red_and_64bit():
    body = """
  mov.u32 %r2, smem;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 st.shared.u32 [%r2], 1000;
  bar.sync 0;
  atom.shared.add.u32 %r4, [%r2], %r0;
  red.shared.add.u32 [%r2+0], 1;
  bar.sync 0;
  ld.shared.u32 %r5, [%r2];
  ld.param.u64 %rd5, [cell];
  cvt.u64.u32 %rd6, %r0;
  red.global.add.u64 [%rd5], %rd6;
  atom.global.max.s64 %rd7, [%rd5+8], %rd6;
  st.global.u32 [%rd1], %r4;
  st.global.u32 [%rd1+256], %r5;
  ret;
"""
    text = entry(body, params=".param .u64 out, .param .u64 cell", before=SMEM)
    out = np.zeros(128, np.uint32)
    cell = np.array([1 << 40, -5 & (2**64 - 1)], np.uint64)
    ptx.load(text).launch("k", grid=1, block=64, args=[out, cell])
    # within a warp the lanes' atomics apply in lane order; which warp's atom goes first, and whether its red
    # lands before the other warp's atom, is the scheduler's choice: lane t of the first warp w sees 1000 + sum of
    # the tids of w's lanes below t; the second warp starts from 1000 + (first warp's tids) (+ 32 where the
    # first warp's red, 1 per lane, came between; so it does one warp at a time, not in lock-step)
    firsts = []
    for w in (0, 1):
        lanes = np.arange(32 * w, 32 * w + 32)
        base = int(out[32 * w])
        assert list(out[lanes]) == [base + int(lanes[:i].sum()) for i in range(32)]
        firsts.append(base)
    s0, s1 = sum(range(32)), sum(range(32, 64))
    assert firsts in ([1000, 1000 + s0 + 32], [1000 + s1 + 32, 1000], [1000, 1000 + s0], [1000 + s1, 1000])
    assert (out[64:128] == 1000 + sum(range(64)) + 64).all()
    assert int(cell[0]) == (1 << 40) + sum(range(64)) and int(cell[1]) == 63


# ------------------------------------------------------------------------------------------------ cp.async

CP = """
  ld.param.u64 %rd5, [src];
  mov.u32 %r2, smem;
  mul.lo.u32 %r3, %r0, {size};
  add.u32 %r2, %r2, %r3;
  cvt.u64.u32 %rd6, %r3;
  add.s64 %rd6, %rd5, %rd6;
  {copy}
  cp.async.commit_group;
  cp.async.wait_group 0;
  ld.shared.u32 %r4, [%r2];
  st.global.u32 [%rd1], %r4;
  ret;
"""


def _cp(copy, size, src, **kw):
    text = entry(CP.replace("{size}", str(size)).replace("{copy}", copy), params=".param .u64 out, .param .u64 src",
                 before=SMEM)
    out = np.zeros(32, np.uint32)
    ptx.load(text).launch("k", grid=1, block=32, args=[out, src], **kw)
    return out


SRC = (np.arange(1024) * 29 + 3).astype(np.uint8)


@pytest.mark.parametrize("size,cache", [(4, "ca"), (8, "ca"), (16, "ca"), (16, "cg")])
def test_cp_async_sizes(size, cache):
    out = _cp(f"cp.async.{cache}.shared.global [%r2], [%rd6], {size};", size, SRC)
    assert list(out) == [int.from_bytes(SRC[size * t:size * t + 4].tobytes(), "little") for t in T]


def test_cp_async_src_size_zero_fill_and_ignore_src():
    # src-size = t % 5 bytes copied, the rest of the 4-byte word zero
    out = _cp("rem.u32 %r5, %r0, 5;\n  cp.async.ca.shared.global [%r2], [%rd6], 4, %r5;", 4, SRC)
    want = [int.from_bytes(bytes(SRC[4 * t:4 * t + min(t % 5, 4)]) + bytes(4 - min(t % 5, 4)), "little") for t in T]
    assert list(out) == want
    out = _cp("cp.async.cg.shared.global [%r2], [%rd6], 16, 3;", 16, SRC)          # immediate src-size
    assert list(out) == [int.from_bytes(bytes(SRC[16 * t:16 * t + 3]) + b"\0", "little") for t in T]
    # ignore-src: odd lanes write zeros and never read their source (an address far out of bounds)
    out = _cp("and.b32 %r5, %r0, 1;\n  setp.eq.u32 %p1, %r5, 1;\n  @%p1 add.s64 %rd6, %rd6, 0x100000000;\n"
              "  cp.async.ca.shared.global [%r2], [%rd6], 4, %p1;", 4, SRC)
    assert list(out) == [0 if t % 2 else int.from_bytes(SRC[4 * t:4 * t + 4].tobytes(), "little") for t in T]
    # src-size 0: nothing is read, even from an invalid address
    out = _cp("mov.u64 %rd6, 0;\n  cp.async.ca.shared.global [%r2], [%rd6], 8, 0;", 8, SRC)
    assert (out == 0).all()


def test_cp_async_data_is_invisible_until_waited():
    with pytest.raises(HazardError) as e:
        _cp("cp.async.ca.shared.global [%r2], [%rd6], 4;\n  ld.shared.u32 %r9, [%r2];", 4, SRC)
    assert "asynchronous copy to it is still in flight" in str(e.value)
    # no wait_group at all (commit only): the read before completion is a hazard too
    text = CP.replace("  cp.async.wait_group 0;\n", "")
    with pytest.raises(HazardError):
        t = entry(text.replace("{size}", "4").replace("{copy}", "cp.async.ca.shared.global [%r2], [%rd6], 4;"),
                  params=".param .u64 out, .param .u64 src", before=SMEM)
        ptx.load(t).launch("k", grid=1, block=32, args=[np.zeros(32, np.uint32), SRC])


def test_cp_async_wait_group_n_keeps_the_newest_groups_in_flight():
    body = """
  ld.param.u64 %rd5, [src];
  mov.u32 %r2, smem;
  shl.b32 %r3, %r0, 2;
  add.u32 %r2, %r2, %r3;
  cvt.u64.u32 %rd6, %r3;
  add.s64 %rd6, %rd5, %rd6;
  cp.async.ca.shared.global [%r2], [%rd6], 4;
  cp.async.commit_group;
  cp.async.ca.shared.global [%r2+128], [%rd6+128], 4;
  cp.async.commit_group;
  cp.async.ca.shared.global [%r2+256], [%rd6+256], 4;
  cp.async.commit_group;
  cp.async.wait_group 2;
  ld.shared.u32 %r4, [%r2];           // group 1: complete
  {read}
  st.global.u32 [%rd1], %r4;
  ret;
"""
    text = entry(body.replace("{read}", "cp.async.wait_group 1;\n  ld.shared.u32 %r5, [%r2+128];\n"
                                        "  cp.async.wait_all;\n  ld.shared.u32 %r6, [%r2+256];\n"
                                        "  add.u32 %r4, %r4, %r5;\n  add.u32 %r4, %r4, %r6;"),
                 params=".param .u64 out, .param .u64 src", before=SMEM)
    out = np.zeros(32, np.uint32)
    ptx.load(text).launch("k", grid=1, block=32, args=[out, SRC])
    w = SRC.view(np.uint32)
    assert list(out) == [(int(w[t]) + int(w[t + 32]) + int(w[t + 64])) & 0xFFFFFFFF for t in T]
    bad = entry(body.replace("{read}", "ld.shared.u32 %r5, [%r2+128];"), params=".param .u64 out, .param .u64 src",
                before=SMEM)
    with pytest.raises(HazardError):     # group 2 is still in flight after wait_group 2
        ptx.load(bad).launch("k", grid=1, block=32, args=[out, SRC])


def test_cp_async_overlapping_copies_in_flight():
    with pytest.raises(HazardError) as e:   # two lanes copy into the same 4 bytes
        _cp("and.b32 %r5, %r0, 30;\n  shl.b32 %r5, %r5, 2;\n  mov.u32 %r6, smem;\n  add.u32 %r6, %r6, %r5;\n"
            "  cp.async.ca.shared.global [%r6], [%rd6], 4;", 4, SRC)
    assert "write the same shared bytes" in str(e.value)
    with pytest.raises(HazardError):        # one lane, two copies to the same bytes before any wait
        _cp("cp.async.ca.shared.global [%r2], [%rd6], 4;\n  cp.async.ca.shared.global [%r2], [%rd6+4], 4;", 4, SRC)


def test_cp_async_visible_to_other_warps_after_wait_and_barrier():
    body = """
  ld.param.u64 %rd5, [src];
  mov.u32 %r2, smem;
  shl.b32 %r3, %r0, 3;
  add.u32 %r2, %r2, %r3;
  cvt.u64.u32 %rd6, %r3;
  add.s64 %rd6, %rd5, %rd6;
  cp.async.ca.shared.global [%r2], [%rd6], 8;
  cp.async.commit_group;
  cp.async.wait_group 0;
  bar.sync 0;
  xor.b32 %r4, %r0, 32;               // the other warp's lane
  shl.b32 %r4, %r4, 3;
  mov.u32 %r5, smem;
  add.u32 %r4, %r4, %r5;
  ld.shared.u32 %r6, [%r4+4];
  st.global.u32 [%rd1], %r6;
  ret;
"""
    text = entry(body, params=".param .u64 out, .param .u64 src", before=SMEM)
    out = np.zeros(64, np.uint32)
    ptx.load(text).launch("k", grid=1, block=64, args=[out, SRC])
    w = SRC.view(np.uint32)
    assert list(out) == [int(w[2 * (t ^ 32) + 1]) for t in range(64)]


@pytest.mark.parametrize("copy,words", [("cp.async.ca.shared.global [%r2+4], [%rd6], 8;", "not aligned"),
                                        ("cp.async.cg.shared.global [%r2], [%rd6], 8;", "expected to be 16"),
                                        ("cp.async.ca.shared.global [%r2], [%rd6], 12;", "expected to be 4 or 8 or 16")])
def test_cp_async_bad_forms(copy, words):
    with pytest.raises(ptx.PtxError) as e:
        _cp(copy, 16, SRC)
    assert words in str(e.value)


# ------------------------------------------------------------------------------------------------ ldmatrix / stmatrix

def _row_addresses(num):
    """Row r of matrix i starts at byte 0x100 * i + 48 * r of smem (rows of 16 bytes with 32 bytes of padding)."""
    return [0x100 * (j // 8) + 48 * (j % 8) for j in range(8 * num)]


def _ldmatrix_ref(mem, num, trans):
    """PTX 9.7.14.5.15: thread t receives, for matrix i, row t // 4, columns 2 (t % 4) and 2 (t % 4) + 1 (low
    half first); .trans loads the matrix column-major, i.e. the fragment of its transpose."""
    rows = _row_addresses(num)
    out = np.zeros((num, 32), np.uint64)
    for i in range(num):
        m = np.array([[mem[(rows[8 * i + r] + 2 * c) // 2] for c in range(8)] for r in range(8)], np.uint64)
        if trans:
            m = m.T
        for t in range(32):
            out[i, t] = m[t // 4, 2 * (t % 4)] | m[t // 4, 2 * (t % 4) + 1] << 16
    return out


LDM = """
  mov.u32 %r2, smem;
  // fill smem with halves h(k) = 1000 + 3k (k = the half's index), 2 words per thread per round
  mov.u32 %r10, 0;
$L_fill:
  mad.lo.u32 %r11, %r10, 32, %r0;       // word index
  shl.b32 %r12, %r11, 1;
  mad.lo.u32 %r13, %r12, 3, 1000;       // low half: k = 2 * word
  add.u32 %r14, %r13, 3;                // high half: k + 1
  shl.b32 %r14, %r14, 16;
  or.b32 %r13, %r13, %r14;
  shl.b32 %r15, %r11, 2;
  add.u32 %r15, %r15, %r2;
  st.shared.u32 [%r15], %r13;
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p1, %r10, 16;
  @%p1 bra $L_fill;
  // this thread's row address: matrix t / 8, row t % 8 (threads past 8 * num hold garbage)
  shr.u32 %r3, %r0, 3;
  and.b32 %r4, %r0, 7;
  mul.lo.u32 %r5, %r4, 48;
  shl.b32 %r6, %r3, 8;
  add.u32 %r5, %r5, %r6;
  add.u32 %r5, %r5, %r2;
  setp.ge.u32 %p2, %r0, {lim};
  @%p2 mov.u32 %r5, 0xFFFF0;
  {ins}
  st.global.v4.u32 [%rd10], {%r20, %r21, %r22, %r23};
  ret;
"""


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix(num, trans):
    regs = ", ".join(f"%r{20 + i}" for i in range(num))
    ins = f"mov.u32 %r21, 0;\n  mov.u32 %r22, 0;\n  mov.u32 %r23, 0;\n  " \
          f"ldmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.shared.b16 {{{regs}}}, [%r5];\n" \
          "  mul.wide.u32 %rd10, %r0, 16;\n  add.s64 %rd10, %rd0, %rd10;"
    out = run(LDM.replace("{lim}", str(8 * num)).replace("{ins}", ins), before=SMEM, out_words=128)
    mem = [(1000 + 3 * k) & 0xFFFF for k in range(2048)]
    want = _ldmatrix_ref(mem, num, trans)
    got = out.reshape(32, 4).T[:num]
    assert np.array_equal(got, want)


def test_ldmatrix_generic_address():
    # no state space: the address is generic and must point into .shared (PTX 9.7.14.5.15)
    ins = "cvt.u64.u32 %rd11, %r5;\n  cvta.shared.u64 %rd11, %rd11;\n  mov.u32 %r23, 0;\n  " \
          "ldmatrix.sync.aligned.m8n8.x2.b16 {%r20, %r21}, [%rd11];\n  mov.u32 %r22, 0;\n" \
          "  mul.wide.u32 %rd10, %r0, 16;\n  add.s64 %rd10, %rd0, %rd10;"
    out = run(LDM.replace("{lim}", "16").replace("  @%p2 mov.u32 %r5, 0xFFFF0;\n", "").replace("{ins}", ins),
              before=SMEM, out_words=128)
    mem = [(1000 + 3 * k) & 0xFFFF for k in range(2048)]
    assert np.array_equal(out.reshape(32, 4).T[:2], _ldmatrix_ref(mem, 2, False))


def test_ldmatrix_faults():
    base = LDM.replace("{lim}", "32")
    good = "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r20, %r21, %r22, %r23}, [%r5];\n" \
           "  mul.wide.u32 %rd10, %r0, 16;\n  add.s64 %rd10, %rd0, %rd10;"
    with pytest.raises(HazardError) as e:       # only some lanes execute it
        run(base.replace("{ins}", "setp.lt.u32 %p3, %r0, 16;\n  @%p3 " + good), before=SMEM, out_words=128)
    assert "all 32 threads" in str(e.value)
    with pytest.raises(MemoryFault):            # a row address not 16-byte aligned
        run(base.replace("{ins}", "add.u32 %r5, %r5, 4;\n  " + good), before=SMEM, out_words=128)
    with pytest.raises(MemoryFault) as e:       # a generic address outside the shared window (a global pointer)
        run(base.replace("{ins}", good.replace("[%r5]", "[%rd1]").replace(".shared.b16", ".b16")), before=SMEM,
            out_words=128)
    assert "not in the shared window" in str(e.value)
    with pytest.raises(MemoryFault) as e:       # stmatrix checks row alignment too
        run(base.replace("{ins}", "add.u32 %r5, %r5, 8;\n  stmatrix.sync.aligned.m8n8.x1.shared.b16 [%r5], {%r0};"
                                  "\n  mov.u64 %rd10, %rd1;"), before=SMEM, out_words=128)
    assert "not aligned to 16 bytes" in str(e.value)
    with pytest.raises(MemoryFault) as e:       # rows nobody wrote
        run(base.replace("{ins}", "add.u32 %r5, %r5, 2048;\n  " + good), before=SMEM, out_words=128)
    assert "nothing wrote" in str(e.value)


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix(num, trans):
    # register i of thread t holds halves (i, t, 0) and (i, t, 1), value 64 i + 2 t + e; stmatrix scatters them,
    # then every thread reads back 16 bytes (one row) per matrix
    regs = ", ".join(f"%r{20 + i}" for i in range(num))
    body = """
  mov.u32 %r2, smem;
  shr.u32 %r3, %r0, 3;
  and.b32 %r4, %r0, 7;
  mul.lo.u32 %r5, %r4, 48;
  shl.b32 %r6, %r3, 8;
  add.u32 %r5, %r5, %r6;
  add.u32 %r5, %r5, %r2;
""" + "".join(f"""  shl.b32 %r30, %r0, 1;
  add.u32 %r30, %r30, {64 * i};
  add.u32 %r31, %r30, 1;
  shl.b32 %r31, %r31, 16;
  or.b32 %r{20 + i}, %r30, %r31;
""" for i in range(num)) + f"""  stmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.shared.b16 [%r5], {{{regs}}};
  bar.warp.sync -1;
  setp.ge.u32 %p1, %r0, {8 * num};
  @%p1 ret;
  ld.shared.v4.u32 {{%r40, %r41, %r42, %r43}}, [%r5];
  mul.wide.u32 %rd10, %r0, 16;
  add.s64 %rd10, %rd0, %rd10;
  st.global.v4.u32 [%rd10], {{%r40, %r41, %r42, %r43}};
  ret;
"""
    out = run(body, before=SMEM, out_words=8 * num * 4)
    got = out.view(np.uint16).reshape(num, 8, 8)        # matrix, row, column
    # PTX 9.7.14.5.16: fragment element (r, c) of matrix i sits in thread 4r + c // 2, half c % 2;
    # .trans stores the matrix column-major: memory (r, c) holds fragment element (c, r)
    frag = np.array([[[64 * i + 2 * (4 * r + c // 2) + c % 2 for c in range(8)] for r in range(8)]
                     for i in range(num)])
    want = frag.transpose(0, 2, 1) if trans else frag
    assert np.array_equal(got, want)


# ------------------------------------------------------------------------------------------------ TMA store

def _warp_tma_store(between, after=""):
    """32 threads fill a 32 x 32 u32 stage, fence, and every lane of warp 0 issues the same TMA store (as
    CUTLASS's sm90 epilogue does); `between` runs after the commit and before the wait, `after` after it."""
    return f"""
.version 8.0
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 dyn[];
.visible .entry k(.param .align 64 .b8 tmap[128])
{{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, dyn;
  mov.u32 %r2, 0;
ROW:
  mad.lo.u32 %r3, %r2, 32, %r0;
  shl.b32 %r4, %r3, 2;
  add.u32 %r5, %r1, %r4;
  mad.lo.u32 %r6, %r3, 2654435761, 12345;
  st.shared.u32 [%r5], %r6;
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p0, %r2, 32;
  @%p0 bra ROW;
  fence.proxy.async.shared::cta;
  bar.warp.sync -1;
  mov.u32 %r7, 32;
  mov.u32 %r8, 64;
  cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [tmap, {{%r7, %r8}}], [%r1];
  cp.async.bulk.commit_group;
{between}
  cp.async.bulk.wait_group.read 0;
{after}
  ret;
}}
"""


def test_warp_wide_tma_store_writes_the_box_and_keeps_the_stage_read_until_wait_group_read():
    from tcemu.ptx.tensormap import encode_tiled
    out = np.zeros((128, 128), np.uint32)
    tm = encode_tiled(out, [32, 32])
    ptx.load(_warp_tma_store("")).launch("k", grid=1, block=32, args=[tm], shared_bytes=4096)
    i = np.arange(32 * 32, dtype=np.uint64)
    want = ((i * 2654435761 + 12345) % 2**32).astype(np.uint32).reshape(32, 32)
    assert np.array_equal(out[64:96, 32:64], want)
    out[64:96, 32:64] = 0
    assert not out.any()   # nothing outside the box
    # a store into the stage before the read completes: every lane's copy still reads it
    with pytest.raises(HazardError, match="bulk copy to global memory still reads"):
        ptx.load(_warp_tma_store("  st.shared.u32 [%r1], %r0;")).launch("k", grid=1, block=32, args=[tm],
                                                                       shared_bytes=4096)
    # after wait_group.read 0 all 32 reads have completed: the stage is free again (every lane stores the same
    # value: lanes of one store writing one byte with different values would race)
    ptx.load(_warp_tma_store("", "  st.shared.u32 [%r1], %r7;")).launch("k", grid=1, block=32, args=[tm],
                                                                       shared_bytes=4096)


def test_mbarrier_state_carries_its_phase_and_pending_count():
    """mbarrier.arrive returns an opaque state captured before the arrive: pending_count reads the arrivals that
    were still pending then, test_wait with the state completes once that phase has (hand-derived: init 4, two
    single arrivals, then one of count 2). The first test_wait asks for parity 1, the phase before phase 0, which
    counts as complete (PTX: a wait on the immediately preceding phase's parity succeeds)."""
    body = """\
  .shared .align 8 .b64 bar;
  setp.ne.u32 %p0, %r0, 0;
  @%p0 bra DONE;
  mov.u32 %r1, bar;
  mbarrier.init.shared::cta.b64 [%r1], 4;
  mbarrier.arrive.shared::cta.b64 %rd2, [%r1];
  mbarrier.arrive.shared::cta.b64 %rd3, [%r1];
  mbarrier.pending_count.b64 %r2, %rd2;
  mbarrier.pending_count.b64 %r3, %rd3;
  mbarrier.test_wait.parity.shared::cta.b64 %p1, [%r1], 1;
  selp.u32 %r4, 1, 0, %p1;
  mbarrier.arrive.shared::cta.b64 %rd4, [%r1], 2;
  mbarrier.pending_count.b64 %r5, %rd4;
  mbarrier.test_wait.shared::cta.b64 %p2, [%r1], %rd2;
  selp.u32 %r6, 1, 0, %p2;
  mbarrier.arrive.shared::cta.b64 %rd5, [%r1];
  mbarrier.pending_count.b64 %r7, %rd5;
  st.global.u32 [%rd0], %r2;
  st.global.u32 [%rd0+4], %r3;
  st.global.u32 [%rd0+8], %r4;
  st.global.u32 [%rd0+12], %r5;
  st.global.u32 [%rd0+16], %r6;
  st.global.u32 [%rd0+20], %r7;
DONE:
  ret;
"""
    out = run(body, out_words=6)
    assert list(out) == [4, 3, 1, 2, 1, 4]   # the last arrive opens phase 1 with 4 pending


def test_failing_test_wait_returns_false_when_nothing_else_can_move():
    """A thread that tests an incomplete phase once, then arrives itself, is legal (test_wait does not wait): the
    failing test gives False, the arrivals complete the phase, a second test gives True. A loop on a phase nobody
    completes is still a hang."""
    body = """\
  .shared .align 8 .b64 bar;
  setp.ne.u32 %p0, %r0, 0;
  @%p0 bra DONE;
  mov.u32 %r1, bar;
  mbarrier.init.shared::cta.b64 [%r1], 2;
  mbarrier.test_wait.parity.shared::cta.b64 %p1, [%r1], 0;
  selp.u32 %r2, 1, 0, %p1;
  mbarrier.arrive.shared::cta.b64 %rd2, [%r1], 2;
  mbarrier.test_wait.parity.shared::cta.b64 %p2, [%r1], 0;
  selp.u32 %r3, 1, 0, %p2;
  st.global.u32 [%rd0], %r2;
  st.global.u32 [%rd0+4], %r3;
DONE:
  ret;
"""
    assert list(run(body, out_words=2)) == [0, 1]
    spin = """\
  .shared .align 8 .b64 bar;
  mov.u32 %r1, bar;
  setp.ne.u32 %p0, %r0, 0;
  @%p0 bra WAIT;
  mbarrier.init.shared::cta.b64 [%r1], 2;
WAIT:
  bar.sync 0;
LOOP:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], 0;
  @!%p1 bra LOOP;
  ret;
"""
    with pytest.raises(ptx.Deadlock, match="2 of 2 arrivals pending"):
        run(spin, out_words=32)


def test_granules_of_rows_and_of_loose_bytes():
    """memory.granules: one granule per aligned row of 16 or more bytes, else one per byte (repeats kept)."""
    from tcemu.ptx.memory import granules
    rows = np.array([0x40, 0x100, 0x20])[:, None] + np.arange(32)
    assert granules(rows).tolist() == [4, 5, 16, 17, 2, 3]
    loose = np.array([0x0f, 0x10, 0x11, 0x3ff])
    assert granules(loose).tolist() == [0, 1, 1, 0x3f]
    assert granules(np.array([0x18])[:, None] + np.arange(16)).tolist() == [1] * 8 + [2] * 8   # not aligned


@pytest.mark.parametrize("count", [40, 32, 20])
def test_mbarrier_arrive_of_many_lanes_counts_each_lane_in_order(count):
    """Threads 0..39 (all of warp 0, then 8 lanes of warp 1) arrive once each on one mbarrier of `count`: each
    lane's state holds the arrivals pending before its own, lane by lane, and a phase that completes part-way
    (count 20, 32) starts the next one at `count` pending. The whole-warp arrival is one step when no phase
    completes before its last lane (40, 32); with 20 the lanes run one at a time."""
    body = f"""\
  .shared .align 8 .b64 bar;
  mov.u32 %r1, bar;
  setp.ne.u32 %p0, %r0, 0;
  @%p0 bra SKIP;
  mbarrier.init.shared::cta.b64 [%r1], {count};
SKIP:
  bar.sync 0;
  setp.ge.u32 %p1, %r0, 32;
  @%p1 bra LATER;
  mbarrier.arrive.shared::cta.b64 %rd2, [%r1];
  mbarrier.pending_count.b64 %r2, %rd2;
  st.global.u32 [%rd1], %r2;
LATER:
  bar.sync 0;                        // warp 1's lanes 0..7 arrive after warp 0
  setp.lt.u32 %p2, %r0, 32;
  setp.ge.u32 %p3, %r0, 40;
  or.pred %p2, %p2, %p3;
  @%p2 bra END;
  mbarrier.arrive.shared::cta.b64 %rd3, [%r1];
  mbarrier.pending_count.b64 %r3, %rd3;
  st.global.u32 [%rd1], %r3;
END:
  ret;
"""
    want, pending = [], count
    for _ in range(40):
        want.append(pending)
        pending = pending - 1 or count
    for lockstep in (True, False):
        out = run(body, block=64, lockstep=lockstep)
        assert out.tolist() == want + [0] * 24


def test_generic_atom_with_lanes_in_two_windows():
    # even lanes add to a global word, odd lanes to a shared one, through one generic atom: each word sees its
    # lanes in lane order (the atom runs as rounds of distinct addresses, per state space)
    body = """
  ld.param.u64 %rd5, [cell];
  mov.u64 %rd7, smem;
  cvta.shared.u64 %rd8, %rd7;
  and.b32 %r2, %r0, 1;
  setp.eq.u32 %p1, %r2, 0;
  selp.b64 %rd9, %rd5, %rd8, %p1;
  setp.eq.u32 %p2, %r0, 1;
  @%p2 st.shared.u32 [smem], 500;
  bar.sync 0;
  mad.lo.u32 %r3, %r0, 7, 2;
  atom.add.u32 %r4, [%rd9], %r3;
  bar.sync 0;
  ld.shared.u32 %r5, [smem];
  st.global.u32 [%rd1], %r4;
  st.global.u32 [%rd1+128], %r5;
  ret;
"""
    out, cell = np.zeros(64, np.uint32), np.array([95], np.uint32)
    ptx.load(entry(body, params=".param .u64 out, .param .u64 cell", before=SMEM)).launch("k", grid=1, block=32,
                                                                                        args=[out, cell])
    for parity, start in ((0, 95), (1, 500)):
        lanes = [t for t in T if t % 2 == parity]
        olds, final = _serial(lambda o, v, c: o + v, start, [7 * t + 2 for t in lanes])
        assert [int(out[t]) for t in lanes] == olds
        assert (int(cell[0]) if parity == 0 else int(out[32])) == final


# ------------------------------------------------------------------------------------------- provenance

def test_sources_kept_per_granule_read_as_the_per_byte_record():
    """SharedWindow keeps the global byte behind each shared byte per 16-byte granule where a granule is one run
    (source16), per byte where not (MIXED); any sequence of copies and plain stores reads back, byte by byte, what a
    plain per-byte array of the same writes holds."""
    from hypothesis import given, settings, strategies as st
    from tcemu.layout.smem import SharedMemory
    from tcemu.ptx.memory import SharedWindow

    hi = 16 * 12 + 5   # a window that ends inside a granule
    kinds = st.sampled_from(["rows", "rows-holes", "rows-scrambled", "store", "bytes", "first-rows"])
    step = st.tuples(kinds, st.integers(0, 11), st.integers(1, 3), st.integers(0, 1 << 40), st.integers(0, 255))

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(st.lists(step, max_size=12))
    def check(steps):
        sh = SharedWindow(SharedMemory(), 0, hi, zero_init=True)
        want = np.full(hi, -1, np.int64)
        for kind, g0, n, base, seed in steps:
            g = np.arange(g0, min(g0 + n, hi // 16))
            if not g.size:
                continue
            spots = g[:, None] * 16 + np.arange(16)
            src = base + np.arange(spots.size).reshape(spots.shape)
            if kind == "first-rows":
                sh.set_source_rows(g, src[:, 0])
            elif kind == "store":
                sh.set_sources(spots, -1)
                src = np.full(spots.shape, -1)
            elif kind == "bytes":   # part of a granule (a 4-byte copy, a st.shared.u32): per byte from here on
                spots, src = spots[:, seed % 13:seed % 13 + 4], src[:, :4]
                sh.set_sources(spots, src)
            else:
                if kind == "rows-holes":   # src-size zero fill: the row's tail has no source
                    src = np.where(np.arange(16) < seed % 17, src, -1)
                elif kind == "rows-scrambled":   # not one run
                    src = src[:, np.random.default_rng(seed).permutation(16)]
                sh.set_sources(spots, src)
            want[spots] = src
        assert np.array_equal(sh.sources(np.arange(hi)), want)
        assert np.array_equal(sh.sources(np.arange(hi).reshape(-1, 1))[:, 0], want)
    check()


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(0, 40))
def test_the_one_pass_shadow_test_answers_as_gather_and_any(seed, n):
    # memory._any_at: arr[idx] nonzero anywhere (check_overwrite's and pending_any's question)
    rng = np.random.default_rng(seed)
    arr = (rng.random(64) < 0.05).astype(np.int32)
    idx = rng.integers(0, 64, n).astype(np.int64)
    assert _any_at(arr, idx) == bool(arr[idx].any())


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(0, 40), st.integers(0, 9))
def test_the_one_pass_fence_test_answers_as_the_comparison(seed, n, bound):
    # memory._any_unfenced: a byte's epoch (its granule's, its own where the granule is MIXED) > bound anywhere
    rng = np.random.default_rng(seed)
    per_byte = rng.integers(0, 10, 64).astype(np.int64)
    g16 = rng.integers(0, 10, 4).astype(np.int64)
    g16[rng.random(4) < 0.5] = MIXED
    idx = rng.integers(0, 64, n).astype(np.int64)
    want = np.where(g16[idx >> 4] == MIXED, per_byte[idx], g16[idx >> 4])
    assert _any_unfenced(g16, per_byte, idx, bound) == bool((want > bound).any())


def _window(hi=0x500):
    return SharedWindow(SharedMemory(), 0x400, hi, False)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 12))
def test_generic_write_epochs_per_granule_read_as_one_per_byte(seed, n):
    # SharedWindow.set_unfenced keeps an epoch per 16-byte granule, per byte (MIXED) only where a write covers part
    # of a granule; epochs() and unfenced_bytes() answer as one int64 a byte did, write after write
    rng = np.random.default_rng(seed)
    sh, ref = _window(), np.zeros(0x500, np.int64)
    for _ in range(n):
        kind = rng.integers(0, 4)
        if kind == 0:   # whole granules, as rows of 16 at aligned starts (a cp.async landing)
            starts = 0x400 + 16 * rng.choice(16, rng.integers(1, 5), replace=False)
            sh.mark_generic(None, starts=starts.astype(np.int64))
            ref[starts[:, None] + np.arange(16)] = sh.write_epoch
        elif kind == 1:   # rows of w bytes at w-aligned offsets (st.shared of 1 to 16 bytes, a row a lane)
            w = int(rng.choice([1, 2, 4, 8, 16, 32]))
            offs = 0x400 + w * rng.choice(0x100 // w, rng.integers(1, 5), replace=False)
            spots = offs[:, None].astype(np.int64) + np.arange(w)
            sh.mark_generic(spots)
            ref[spots] = sh.write_epoch
        elif kind == 2:   # a row's own epoch (the st.shared gang: one a warp)
            offs = 0x400 + 4 * rng.choice(8, 3)   # (a row twice: the later one its epoch)
            spots = offs[:, None].astype(np.int64) + np.arange(4)
            ep = sh.write_epoch + 1 + np.arange(3)[:, None]
            sh.write_epoch += 3
            sh.set_unfenced(spots, ep)
            ref[spots] = ep
        else:   # an async-proxy write (a TMA box): nothing to fence
            spots = np.arange(0x400, 0x500)[rng.random(0x100) < 0.2]
            sh.set_unfenced(spots, 0)
            ref[spots] = 0
        if rng.random() < 0.3:
            sh.fence_proxy_async()
        every = np.arange(0x400, 0x500)
        assert np.array_equal(sh.epochs(every), ref[every])
        ask = every[rng.random(0x100) < 0.3]
        assert np.array_equal(sh.unfenced_bytes(ask), ask[ref[ask] > sh.fence_epoch])


def test_whole_granule_writes_keep_no_epoch_per_byte():
    # a kernel that writes whole granules (cp.async.cg, st.shared.v4) never makes the per-byte epochs
    sh = _window()
    sh.mark_generic(None, starts=np.array([0x400, 0x430], np.int64))
    sh.mark_generic((0x480 + np.arange(32))[None, :])
    assert "unfenced" not in sh.__dict__ and sh.unfenced16.nbytes == 8 * (0x500 >> 4)
    assert list(sh.epochs(np.array([0x400, 0x40F, 0x410, 0x430, 0x480, 0x49F]))) == [1, 1, 0, 1, 2, 2]
    sh.mark_generic(np.array([[0x404, 0x405]]))   # part of a granule: it alone goes per byte
    assert sh.unfenced16[0x40] == MIXED and list(sh.epochs(np.array([0x403, 0x404, 0x406]))) == [1, 3, 1]
    sh.mark_generic(0x400 + np.arange(16).reshape(2, 8))   # two lanes' 8-byte stores cover it: one epoch again
    assert sh.unfenced16[0x40] == 4 and list(sh.epochs(np.array([0x400, 0x404, 0x40F]))) == [4, 4, 4]
    sh.mark_generic(np.array([[0x404, 0x405]]))
    assert sh.unfenced16[0x40] == MIXED and list(sh.epochs(np.array([0x403, 0x404, 0x406]))) == [4, 5, 4]
    sh.mark_generic(None, starts=np.array([0x400], np.int64))   # whole again
    assert sh.unfenced16[0x40] == 6 and list(sh.epochs(np.array([0x403, 0x404]))) == [6, 6]


def test_a_generic_store_makes_no_tma_or_mbarrier_shadow():
    # shadows made on first use stay unmade where nothing needs them: a plain st.shared (or a hang probe's) had made
    # guard_bar (8 bytes a shared byte) and mbar_live, all -1 / False, in every window it touched
    sh = _window()
    sh.store(np.array([0x400, 0x410], np.int64), np.full((2, 4), 7, np.uint8), [0, 1], "st.shared")
    assert sh.load(np.array([0x400], np.int64), 4, [0], "ld.shared").tolist() == [[7, 7, 7, 7]]
    assert "guard_bar" not in sh.__dict__ and "mbar_live" not in sh.__dict__
    assert list(sh.epochs(np.array([0x400, 0x404, 0x410]))) == [1, 0, 1] and sh.unfenced16[0x40] == MIXED


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(0, 40), st.integers(1, 20))
def test_the_one_pass_guard_keys_are_the_distinct_barrier_phases(seed, n, room):
    # guardscan.guard_keys: the distinct (barrier << 32 | phase) of guarded bytes (guard_bar >= 0), or -1 past room
    rng = np.random.default_rng(seed)
    bar = np.where(rng.random(64) < 0.3, -1, rng.integers(0, 3, 64) * 8).astype(np.int64)
    phase = rng.integers(0, 3, 64).astype(np.int64)
    idx = rng.integers(0, 64, n).astype(np.int64)
    keys = np.empty(room, np.int64)
    got = _guard_keys(bar, phase, idx, keys)
    hit = bar[idx] >= 0
    want = set(((bar[idx][hit] << 32) | phase[idx][hit]).tolist())
    if len(want) > room:
        assert got == -1
    else:
        assert got == len(want) and set(keys[:got].tolist()) == want
