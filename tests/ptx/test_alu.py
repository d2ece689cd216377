"""Integer ALU instructions run through kernels (one instruction per lane over many operand triples) against
plain-Python statements of the PTX ISA 9.0 semantics: integer arithmetic 9.7.1, comparison and selection
9.7.6, logic and shift 9.7.8, data movement and conversion 9.7.9 (mov, prmt, cvt). Section numbers follow
the ISA 9.0 table of contents. A few worked values are derived by hand in comments.

The float checks are limited to cvt.rn.{f16x2,bf16x2}.f32 and round-to-nearest add/mul .f32 (the exact float
library is written elsewhere)."""
import ml_dtypes
import numpy as np
import pytest

from ptx_reference import sass_bfe64, sass_bfi64
from ptxkit import alu, run, s32, s64, sx

M32, M64 = (1 << 32) - 1, (1 << 64) - 1
RNG = np.random.default_rng(20261122)

EDGE32 = [0, 1, 2, 3, 7, 31, 32, 33, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x12345678,
          0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFF0000, 0xFFFFFFFE, 0xFFFFFFFF, 0xDEADBEEF, 0x00FF00FF]
EDGE64 = [0, 1, 2, 63, 64, 65, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x100000000, 0x7FFFFFFFFFFFFFFF,
          0x8000000000000000, 0x8000000000000001, 0xFFFFFFFFFFFFFFFF, 0xFFFFFFFF00000000, 0x0123456789ABCDEF]


def _mix(edges, bits, n=96):
    """Operand triples: every edge value against shuffled edges, then random patterns."""
    a = list(edges) + [int(x) for x in RNG.integers(0, 1 << bits, n - len(edges), dtype=np.uint64)]
    b = list(edges[-5:] + edges[:-5]) + [int(x) for x in RNG.integers(0, 1 << bits, n - len(edges), dtype=np.uint64)]
    c = list(edges[-11:] + edges[:-11]) + [int(x) for x in RNG.integers(0, 1 << bits, n - len(edges), dtype=np.uint64)]
    return [int(x) for x in a], [int(x) for x in b], [int(x) for x in c]


A32, B32, C32 = _mix(EDGE32, 32)
A64, B64, C64 = _mix(EDGE64, 64)
SMALL = [int(x) for x in RNG.integers(0, 72, len(A32))]          # shift amounts / positions 0..71


def check(snippet, ref, a, b=None, c=None, wide=False):
    got = alu(snippet, a, b, c, wide)
    mask = M64 if wide else M32
    n = len(a)
    b = b if b is not None else [0] * n
    c = c if c is not None else [0] * n
    want = [ref(x, y, z) & mask for x, y, z in zip(a, b, c)]
    bad = [(i, hex(a[i]), hex(b[i]), hex(c[i]), hex(int(got[i])), hex(want[i])) for i in range(n)
           if int(got[i]) != want[i]]
    assert not bad, f"{snippet.strip()}: first mismatches (i, a, b, c, got, want): {bad[:4]}"


def clamp(v, lo, hi):
    return max(lo, min(hi, v))


def trunc_div(x, y):
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


# ------------------------------------------------------------------------------------------------ 9.7.1

ARITH32 = [
    ("add.u32 %r4, %r1, %r2;", lambda a, b, c: a + b),
    ("add.s32 %r4, %r1, %r2;", lambda a, b, c: s32(a) + s32(b)),
    ("sub.u32 %r4, %r1, %r2;", lambda a, b, c: a - b),
    ("add.sat.s32 %r4, %r1, %r2;", lambda a, b, c: clamp(s32(a) + s32(b), -2**31, 2**31 - 1)),
    ("sub.sat.s32 %r4, %r1, %r2;", lambda a, b, c: clamp(s32(a) - s32(b), -2**31, 2**31 - 1)),
    ("mul.lo.u32 %r4, %r1, %r2;", lambda a, b, c: a * b),
    ("mul.lo.s32 %r4, %r1, %r2;", lambda a, b, c: s32(a) * s32(b)),
    ("mul.hi.u32 %r4, %r1, %r2;", lambda a, b, c: (a * b) >> 32),
    ("mul.hi.s32 %r4, %r1, %r2;", lambda a, b, c: (s32(a) * s32(b)) >> 32),
    ("mad.lo.u32 %r4, %r1, %r2, %r3;", lambda a, b, c: a * b + c),
    ("mad.lo.s32 %r4, %r1, %r2, %r3;", lambda a, b, c: s32(a) * s32(b) + s32(c)),
    ("mad.hi.u32 %r4, %r1, %r2, %r3;", lambda a, b, c: ((a * b) >> 32) + c),
    ("mad.hi.s32 %r4, %r1, %r2, %r3;", lambda a, b, c: ((s32(a) * s32(b)) >> 32) + s32(c)),
    # .sat: t<63..32> + c limited to MININT..MAXINT
    ("mad.hi.sat.s32 %r4, %r1, %r2, %r3;",
     lambda a, b, c: clamp(((s32(a) * s32(b)) >> 32) + s32(c), -2**31, 2**31 - 1)),
    ("mul24.lo.u32 %r4, %r1, %r2;", lambda a, b, c: (a & 0xFFFFFF) * (b & 0xFFFFFF)),
    ("mul24.hi.u32 %r4, %r1, %r2;", lambda a, b, c: ((a & 0xFFFFFF) * (b & 0xFFFFFF)) >> 16),
    ("mul24.hi.s32 %r4, %r1, %r2;", lambda a, b, c: (sx(a, 24) * sx(b, 24)) >> 16),
    ("mad24.lo.s32 %r4, %r1, %r2, %r3;", lambda a, b, c: sx(a, 24) * sx(b, 24) + s32(c)),
    ("sad.u32 %r4, %r1, %r2, %r3;", lambda a, b, c: c + (b - a if a < b else a - b)),
    ("sad.s32 %r4, %r1, %r2, %r3;", lambda a, b, c: c + abs(s32(a) - s32(b))),
    ("min.u32 %r4, %r1, %r2;", lambda a, b, c: min(a, b)),
    ("max.u32 %r4, %r1, %r2;", lambda a, b, c: max(a, b)),
    ("min.s32 %r4, %r1, %r2;", lambda a, b, c: min(s32(a), s32(b))),
    ("max.s32 %r4, %r1, %r2;", lambda a, b, c: max(s32(a), s32(b))),
    ("max.relu.s32 %r4, %r1, %r2;", lambda a, b, c: max(max(s32(a), s32(b)), 0)),
    ("min.relu.s32 %r4, %r1, %r2;", lambda a, b, c: max(min(s32(a), s32(b)), 0)),
    ("abs.s32 %r4, %r1;", lambda a, b, c: abs(s32(a))),          # abs(MININT) wraps to MININT
    ("neg.s32 %r4, %r1;", lambda a, b, c: -s32(a)),
    ("popc.b32 %r4, %r1;", lambda a, b, c: bin(a).count("1")),
    ("clz.b32 %r4, %r1;", lambda a, b, c: 32 - a.bit_length()),
    ("brev.b32 %r4, %r1;", lambda a, b, c: int(f"{a:032b}"[::-1], 2)),
]


def bfind_ref(a, bits, signed, shiftamt):
    """PTX 9.7.1.16 pseudo-code."""
    msb = bits - 1
    if signed and a >> msb & 1:
        a = ~a & ((1 << bits) - 1)
    d = 0xFFFFFFFF
    for i in range(msb, -1, -1):
        if a >> i & 1:
            d = i
            break
    if shiftamt and d != 0xFFFFFFFF:
        d = msb - d
    return d


ARITH32 += [(f"bfind{'.shiftamt' if sh else ''}.{t}32 %r4, %r1;",
             (lambda s, h: lambda a, b, c: bfind_ref(a, 32, s, h))(t == "s", sh))
            for t in "us" for sh in (False, True)]


@pytest.mark.parametrize("snippet,ref", ARITH32, ids=[s.split()[0] for s, _ in ARITH32])
def test_arith32(snippet, ref):
    check(snippet, ref, A32, B32, C32)


def _halves(fn, signed):
    """A .u16x2/.s16x2 reference: fn on the upper and the lower halfwords independently (PTX 9.7.1.1, 9.7.1.10)."""
    def ref(a, b, c):
        v = sx if signed else (lambda x, bits: x & 0xFFFF)
        hi, lo = fn(v(a >> 16, 16), v(b >> 16, 16)), fn(v(a, 16), v(b, 16))
        return (hi & 0xFFFF) << 16 | lo & 0xFFFF
    return ref


X2 = [("add.u16x2", lambda x, y: x + y, False), ("add.s16x2", lambda x, y: x + y, True),
      ("min.u16x2", min, False), ("max.u16x2", max, False), ("min.s16x2", min, True), ("max.s16x2", max, True),
      ("max.relu.s16x2", lambda x, y: max(x, y, 0), True), ("min.relu.s16x2", lambda x, y: max(min(x, y), 0), True)]


@pytest.mark.parametrize("form,fn,signed", X2, ids=[f for f, _, _ in X2])
def test_packed_halfword_simd(form, fn, signed):
    """Triton 3.9 emits max.u16x2 / add.s16x2 for uint16 reductions and mxfp scale arithmetic: each halfword on
    its own, the carry of the lower never reaching the upper (0xFFFF + 1 wraps to 0 in its half)."""
    check(f"{form} %r4, %r1, %r2;", _halves(fn, signed), A32, B32)
    if form == "add.u16x2":
        assert int(alu("add.u16x2 %r4, %r1, %r2;", [0x0001FFFF], [0x00020001])[0]) == 0x00030000
    # a planted bug the check catches: the lower half's carry into the upper half
    with pytest.raises(AssertionError, match="first mismatches"):
        check(f"{form} %r4, %r1, %r2;", lambda a, b, c: _halves(fn, signed)(a, b, c) ^ 0x10000, A32, B32)


def test_packed_halfword_simd_forms_outside_the_isa_refused():
    # sub has no .u16x2/.s16x2 form (PTX 9.7.1.2 lists none; tcemu.ptx.intarith): refused when loaded, naming it
    from tcemu.ptx import PtxSyntaxError
    with pytest.raises(PtxSyntaxError, match=r"sub\.s16x2.*16x2 forms are add/min/max"):
        alu("sub.s16x2 %r4, %r1, %r2;", [1], [2])


def test_div_rem_truncate_toward_zero():
    # PTX 9.7.1.8/9: signed division truncates; b = 0 and MININT / -1 are unspecified: not tested
    b = [y if y != 0 else 3 for y in B32]
    a = [x if not (x == 0x80000000) else 0x80000010 for x in A32]
    check("div.u32 %r4, %r1, %r2;", lambda x, y, z: x // y, a, b)
    check("rem.u32 %r4, %r1, %r2;", lambda x, y, z: x % y, a, b)
    check("div.s32 %r4, %r1, %r2;", lambda x, y, z: trunc_div(s32(x), s32(y)), a, b)
    check("rem.s32 %r4, %r1, %r2;", lambda x, y, z: s32(x) - trunc_div(s32(x), s32(y)) * s32(y), a, b)
    # worked: -7 / 2 = -3 rem -1; 7 / -2 = -3 rem 1
    check("div.s32 %r4, %r1, %r2;", lambda x, y, z: [0xFFFFFFFD, 0xFFFFFFFD][x == 7], [M32 - 6, 7], [2, M32 - 1])
    check("rem.s32 %r4, %r1, %r2;", lambda x, y, z: [M32, 1][x == 7], [M32 - 6, 7], [2, M32 - 1])


ARITH64 = [
    ("add.s64 %rd24, %rd21, %rd22;", lambda a, b, c: a + b),
    ("sub.u64 %rd24, %rd21, %rd22;", lambda a, b, c: a - b),
    ("mul.lo.u64 %rd24, %rd21, %rd22;", lambda a, b, c: a * b),
    ("mul.hi.u64 %rd24, %rd21, %rd22;", lambda a, b, c: (a * b) >> 64),
    ("mul.hi.s64 %rd24, %rd21, %rd22;", lambda a, b, c: (s64(a) * s64(b)) >> 64),
    ("mad.lo.s64 %rd24, %rd21, %rd22, %rd23;", lambda a, b, c: a * b + c),
    ("mad.hi.u64 %rd24, %rd21, %rd22, %rd23;", lambda a, b, c: ((a * b) >> 64) + c),
    ("cvt.u32.u64 %r1, %rd21;\n  cvt.u32.u64 %r2, %rd22;\n  mul.wide.u32 %rd24, %r1, %r2;",
     lambda a, b, c: (a & M32) * (b & M32)),
    ("cvt.u32.u64 %r1, %rd21;\n  cvt.u32.u64 %r2, %rd22;\n  mul.wide.s32 %rd24, %r1, %r2;",
     lambda a, b, c: s32(a) * s32(b)),
    ("cvt.u32.u64 %r1, %rd21;\n  cvt.u32.u64 %r2, %rd22;\n  mad.wide.s32 %rd24, %r1, %r2, %rd23;",
     lambda a, b, c: s32(a) * s32(b) + c),
    ("cvt.u32.u64 %r1, %rd21;\n  cvt.u32.u64 %r2, %rd22;\n  mad.wide.u32 %rd24, %r1, %r2, %rd23;",
     lambda a, b, c: (a & M32) * (b & M32) + c),
    ("min.s64 %rd24, %rd21, %rd22;", lambda a, b, c: min(s64(a), s64(b))),
    ("max.u64 %rd24, %rd21, %rd22;", lambda a, b, c: max(a, b)),
    ("popc.b64 %r4, %rd21;\n  cvt.u64.u32 %rd24, %r4;", lambda a, b, c: bin(a).count("1")),
    ("clz.b64 %r4, %rd21;\n  cvt.u64.u32 %rd24, %r4;", lambda a, b, c: 64 - a.bit_length()),
    ("brev.b64 %rd24, %rd21;", lambda a, b, c: int(f"{a:064b}"[::-1], 2)),
    ("bfind.u64 %r4, %rd21;\n  cvt.u64.u32 %rd24, %r4;", lambda a, b, c: bfind_ref(a, 64, False, False)),
    ("bfind.shiftamt.s64 %r4, %rd21;\n  cvt.u64.u32 %rd24, %r4;", lambda a, b, c: bfind_ref(a, 64, True, True)),
    ("abs.s64 %rd24, %rd21;", lambda a, b, c: abs(s64(a))),
]


@pytest.mark.parametrize("snippet,ref", ARITH64, ids=[s.strip().split("\n")[-1].split()[0] if s.startswith("cvt")
                                                      else s.split()[0] for s, _ in ARITH64])
def test_arith64(snippet, ref):
    check(snippet, ref, A64, B64, C64, wide=True)


def test_div_rem_64():
    b = [y if y not in (0, M64) else 5 for y in B64]
    check("div.s64 %rd24, %rd21, %rd22;", lambda x, y, z: trunc_div(s64(x), s64(y)), A64, b, wide=True)
    check("rem.s64 %rd24, %rd21, %rd22;", lambda x, y, z: s64(x) - trunc_div(s64(x), s64(y)) * s64(y), A64, b,
          wide=True)
    check("div.u64 %rd24, %rd21, %rd22;", lambda x, y, z: x // y, A64, b, wide=True)


def test_16bit_operations_and_wide_products():
    # 16-bit registers: a, b are the low halves of the 32-bit inputs
    pre = "  cvt.u16.u32 %h1, %r1;\n  cvt.u16.u32 %h2, %r2;\n"
    check(pre + "  mul.wide.u16 %r4, %h1, %h2;", lambda a, b, c: (a & 0xFFFF) * (b & 0xFFFF), A32, B32)
    check(pre + "  mul.wide.s16 %r4, %h1, %h2;", lambda a, b, c: sx(a, 16) * sx(b, 16), A32, B32)
    check(pre + "  add.u16 %h3, %h1, %h2;\n  cvt.u32.u16 %r4, %h3;", lambda a, b, c: (a + b) & 0xFFFF, A32, B32)
    check(pre + "  mul.hi.s16 %h3, %h1, %h2;\n  cvt.s32.s16 %r4, %h3;",
          lambda a, b, c: sx((sx(a, 16) * sx(b, 16)) >> 16, 16), A32, B32)
    check(pre + "  max.s16 %h3, %h1, %h2;\n  cvt.u32.u16 %r4, %h3;",
          lambda a, b, c: max(sx(a, 16), sx(b, 16)) & 0xFFFF, A32, B32)


@pytest.mark.parametrize("types", [("u32", "u32"), ("s32", "s32"), ("s32", "u32"), ("u32", "s32")])
def test_dp4a(types):
    ta, tb = types

    def ref(a, b, c):   # PTX 9.7.1.23: c + sum of the four byte products (bytes sign/zero extended per type)
        bytes_a = [(a >> 8 * i) & 0xFF for i in range(4)]
        bytes_b = [(b >> 8 * i) & 0xFF for i in range(4)]
        va = [sx(x, 8) if ta == "s32" else x for x in bytes_a]
        vb = [sx(x, 8) if tb == "s32" else x for x in bytes_b]
        return c + sum(x * y for x, y in zip(va, vb))
    check(f"dp4a.{ta}.{tb} %r4, %r1, %r2, %r3;", ref, A32, B32, C32)
    # worked: a = 0xFF010203 (s8: -1, 1, 2, 3 from the top), b = 0x02020202, c = 10 -> 10 + 2*(3 + 2 + 1 - 1) = 20
    if types == ("s32", "s32"):
        check("dp4a.s32.s32 %r4, %r1, %r2, %r3;", lambda a, b, c: 20, [0xFF010203], [0x02020202], [10])


@pytest.mark.parametrize("mode", ["lo", "hi"])
@pytest.mark.parametrize("types", [("u32", "u32"), ("s32", "s32"), ("u32", "s32"), ("s32", "u32")])
def test_dp2a(mode, types):
    ta, tb = types

    def ref(a, b, c):   # PTX 9.7.1.24: Va = two 16-bit halves of a, Vb = bytes of b from 0 (.lo) or 2 (.hi)
        va = [(a >> 16 * i) & 0xFFFF for i in range(2)]
        vb = [(b >> 8 * i) & 0xFF for i in range(4)]
        va = [sx(x, 16) if ta == "s32" else x for x in va]
        vb = [sx(x, 8) if tb == "s32" else x for x in vb]
        sel = 0 if mode == "lo" else 2
        return c + va[0] * vb[sel] + va[1] * vb[sel + 1]
    check(f"dp2a.{mode}.{ta}.{tb} %r4, %r1, %r2, %r3;", ref, A32, B32, C32)


# ------------------------------------------------------------------------------------------------ bit fields

def bfe_ref(a, pos, ln, bits, signed):
    """PTX 9.7.1.19 pseudo-code."""
    msb = bits - 1
    pos, ln = pos & 0xFF, ln & 0xFF
    sbit = 0 if (not signed or ln == 0) else a >> min(pos + ln - 1, msb) & 1
    d = 0
    for i in range(bits):
        bit = (a >> (pos + i) & 1) if (i < ln and pos + i <= msb) else sbit
        d |= bit << i
    return d


def bfi_ref(a, b, pos, ln, bits):
    """PTX 9.7.1.20 pseudo-code."""
    msb = bits - 1
    pos, ln = pos & 0xFF, ln & 0xFF
    f = b
    i = 0
    while i < ln and pos + i <= msb:
        f = (f & ~(1 << (pos + i))) | ((a >> i & 1) << (pos + i))
        i += 1
    return f


POS = SMALL[:48] + [0x100 + 3, 0x1FF, 0x120, 255, 254, 250] + SMALL[54:]      # bits above 0xff are ignored
LEN = list(np.roll(SMALL, 7)[:40]) + [0, 0, 255, 0x101, 64, 32, 33, 1] + list(np.roll(SMALL, 7)[48:])
LEN = [int(x) for x in LEN]


@pytest.mark.parametrize("signed", [False, True])
def test_bfe32(signed):
    t = "s32" if signed else "u32"
    check(f"bfe.{t} %r4, %r1, %r2, %r3;", lambda a, b, c: bfe_ref(a, b, c, 32, signed), A32, POS, LEN)
    if signed:
        # worked: a = 0x80000000, pos 28, len 8: field bits 28..31 = 1000b, bits 4..7 of the field lie past
        # the msb and take the sign bit a[min(35, 31)] = 1, as do bits 8..31 -> 0xFFFFFFF8
        check("bfe.s32 %r4, %r1, %r2, %r3;", lambda a, b, c: 0xFFFFFFF8, [0x80000000], [28], [8])
        # a = 0x70000000, pos 28, len 8: field 0111b, sign bit a[31] = 0 -> 0x7
        check("bfe.s32 %r4, %r1, %r2, %r3;", lambda a, b, c: 0x7, [0x70000000], [28], [8])


@pytest.mark.parametrize("signed", [False, True])
def test_bfe64(signed):
    # the 64-bit forms take pos and len as whole u32 values, not modulo 256 as the PTX text says: the H100's
    # SASS sequence (traces/ptx_alu_sm90.npz, 27,192 cases; tests/support/ptx_reference.sass_bfe64 models it)
    t = "s64" if signed else "u64"
    pre = "  cvt.u32.u64 %r2, %rd22;\n  cvt.u32.u64 %r3, %rd23;\n"
    check(pre + f"  bfe.{t} %rd24, %rd21, %r2, %r3;", lambda a, b, c: sass_bfe64(a, b & M32, c & M32, signed),
          A64, [p + 0 for p in POS[:len(A64)]], LEN[:len(A64)], wide=True)


def test_bfi():
    # pos = c & 0xff, len = (c >> 8) & 0xff
    c = [p | (ln << 8) for p, ln in zip(POS, LEN)]
    check("shr.u32 %r5, %r3, 8;\n  bfi.b32 %r4, %r1, %r2, %r3, %r5;",
          lambda a, b, cc: bfi_ref(a, b, cc, cc >> 8, 32), A32, B32, c)
    pre = "  cvt.u32.u64 %r3, %rd23;\n  shr.u32 %r5, %r3, 8;\n"
    check(pre + "  bfi.b64 %rd24, %rd21, %rd22, %r3, %r5;",  # whole u32 pos / len, as test_bfe64 says
          lambda a, b, cc: sass_bfi64(a, b, cc & M32, (cc & M32) >> 8), A64, B64, c[:len(A64)], wide=True)


# ------------------------------------------------------------------------------------------------ 9.7.8

def shift_ref(op, a, n, bits, signed):
    """PTX 9.7.8.8/9: amounts greater than the width clamp to it; signed shr fills with the sign bit."""
    n = min(n, bits)
    if op == "shl":
        return a << n
    return (sx(a, bits) >> n) if signed else a >> n


@pytest.mark.parametrize("form", ["shl.b32", "shr.u32", "shr.s32", "shr.b32"])
def test_shift32(form):
    op, t = form.split(".")
    amounts = SMALL[:80] + [32, 33, 255, 0x80000000, M32, 31, 0, 1, 0x100, 40, 1 << 31, 64, 63, 96, 200, 1000]
    check(f"{form} %r4, %r1, %r2;", lambda a, b, c: shift_ref(op, a, b, 32, t == "s32"), A32, amounts)


@pytest.mark.parametrize("form", ["shl.b64", "shr.u64", "shr.s64"])
def test_shift64(form):
    op, t = form.split(".")
    amounts = [int(x) for x in SMALL[:len(A64) - 6]] + [64, 65, 63, 1000, M32, 0]
    check(f"cvt.u32.u64 %r2, %rd22;\n  {form} %rd24, %rd21, %r2;",
          lambda a, b, c: shift_ref(op, a, b & M32, 64, t == "s64"), A64, amounts, wide=True)


@pytest.mark.parametrize("form", ["shl.b16", "shr.u16", "shr.s16"])
def test_shift16(form):
    op, t = form.split(".")
    check(f"cvt.u16.u32 %h1, %r1;\n  {form} %h3, %h1, %r2;\n  cvt.u32.u16 %r4, %h3;",
          lambda a, b, c: shift_ref(op, a & 0xFFFF, b, 16, t == "s16") & 0xFFFF, A32, SMALL)


@pytest.mark.parametrize("form", ["shf.l.wrap.b32", "shf.r.wrap.b32", "shf.l.clamp.b32", "shf.r.clamp.b32"])
def test_shf(form):
    _, d, mode, _ = form.split(".")

    def ref(a, b, c):   # PTX 9.7.8.7: shift the 64-bit {b, a}; .l keeps the upper word, .r the lower
        n = min(c, 32) if mode == "clamp" else c & 31
        pair = b << 32 | a
        return ((pair << n) >> 32) if d == "l" else pair >> n
    amounts = SMALL[:80] + [32, 33, 64, 0, 31, M32, 0x21, 16, 8, 1, 0x100, 0x120, 2, 3, 4, 5]
    check(f"{form} %r4, %r1, %r2, %r3;", ref, A32, B32, amounts)


def lop3_ref(a, b, c, lut):
    """PTX 9.7.8.6: result bit = immLut bit (a << 2 | b << 1 | c), as ta = 0xF0, tb = 0xCC, tc = 0xAA imply."""
    d = 0
    for i in range(32):
        idx = (a >> i & 1) << 2 | (b >> i & 1) << 1 | (c >> i & 1)
        d |= (lut >> idx & 1) << i
    return d


@pytest.mark.parametrize("lut", [0x00, 0xFF, 0x80, 0xFE, 0x96, 0xE8, 0xCA, 0x1A, 0x40, 0x3C, 0x5A, 0x0F, 0x6B])
def test_lop3(lut):
    check(f"lop3.b32 %r4, %r1, %r2, %r3, {lut:#x};", lambda a, b, c: lop3_ref(a, b, c, lut), A32, B32, C32)
    # the LUT of F(a, b, c) is F(0xF0, 0xCC, 0xAA): xor3 -> 0x96, majority -> 0xE8, a ? b : c -> 0xCA
    assert (0xF0 ^ 0xCC ^ 0xAA, (0xF0 & 0xCC) | (0xF0 & 0xAA) | (0xCC & 0xAA), (0xF0 & 0xCC) | (~0xF0 & 0xAA)) == \
        (0x96, 0xE8, 0xCA)


@pytest.mark.parametrize("form", ["and.b32", "or.b32", "xor.b32", "not.b32", "cnot.b32"])
def test_logic(form):
    op = form.split(".")[0]
    ref = {"and": lambda a, b, c: a & b, "or": lambda a, b, c: a | b, "xor": lambda a, b, c: a ^ b,
           "not": lambda a, b, c: ~a, "cnot": lambda a, b, c: int(a == 0)}[op]
    operands = "%r4, %r1" if op in ("not", "cnot") else "%r4, %r1, %r2"
    check(f"{form} {operands};", ref, A32, B32)


# ------------------------------------------------------------------------------------------------ 9.7.9.7 prmt

PRMT_MODES = {   # PTX 9.7.9.7 table: for selector c[1:0], the source byte of d.b0, d.b1, d.b2, d.b3
    "f4e": [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]],
    "b4e": [[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]],
    "rc8": [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]],
    "ecl": [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]],
    "ecr": [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]],
    "rc16": [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]],
}


def prmt_ref(a, b, c, mode=None):
    src = b << 32 | a
    byte = [(src >> 8 * i) & 0xFF for i in range(8)]
    d = 0
    for k in range(4):
        if mode is None:
            sel = (c >> 4 * k) & 0xF
            v = byte[sel & 7]
            if sel & 8:   # msb of the selector: replicate the byte's sign bit
                v = 0xFF if v & 0x80 else 0
        else:
            v = byte[PRMT_MODES[mode][c & 3][k]]
        d |= v << 8 * k
    return d


@pytest.mark.parametrize("mode", [None] + list(PRMT_MODES))
def test_prmt(mode):
    suffix = f".{mode}" if mode else ""
    check(f"prmt.b32{suffix} %r4, %r1, %r2, %r3;", lambda a, b, c: prmt_ref(a, b, c, mode), A32, B32, C32)
    if mode is None:
        # worked: a = 0x03020100, b = 0x07060504 (byte i holds i), c = 0x7531 -> bytes 1, 3, 5, 7 = 0x07050301;
        # c = 0x8 with a's byte 0 = 0x80 -> byte 0 replicates its sign: 0xFF, bytes 1-3 select byte 0 = 0x80
        check("prmt.b32 %r4, %r1, %r2, %r3;", lambda a, b, c: {0x7531: 0x07050301, 0x0008: 0x808080FF}[c],
              [0x03020100, 0x03020180], [0x07060504, 0x07060504], [0x7531, 0x0008])


# ------------------------------------------------------------------------------------------------ 9.7.6

SETP_S = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
          "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}
SETP_U = {"lo": lambda x, y: x < y, "ls": lambda x, y: x <= y, "hi": lambda x, y: x > y,
          "hs": lambda x, y: x >= y, "eq": lambda x, y: x == y, "ne": lambda x, y: x != y,
          "lt": lambda x, y: x < y, "ge": lambda x, y: x >= y}   # on .u32, lt/ge compare unsigned too
BOOLOP = {"and": lambda p, q: p and q, "or": lambda p, q: p or q, "xor": lambda p, q: p != q}

# a mix of equal, near and far operands: b = a for a third of the lanes
B_NEAR = [a if i % 3 == 0 else (a + 1 if i % 3 == 1 else b) for i, (a, b) in enumerate(zip(A32, B32))]


@pytest.mark.parametrize("cmp,typ", [(c, "s32") for c in SETP_S] + [(c, "u32") for c in SETP_U] +
                         [("lt", "u32"), ("ge", "u32")])
def test_setp(cmp, typ):
    f = (SETP_S if typ == "s32" else SETP_U)[cmp]
    view = s32 if typ == "s32" else (lambda v: v)
    # p|q: q is the complement; packed as p | q << 1
    check(f"setp.{cmp}.{typ} %p1|%p2, %r1, %r2;\n  selp.u32 %r4, 1, 0, %p1;\n  selp.u32 %r5, 2, 0, %p2;\n"
          "  or.b32 %r4, %r4, %r5;",
          lambda a, b, c: int(f(view(a), view(b))) | int(not f(view(a), view(b))) << 1, A32, B_NEAR)


@pytest.mark.parametrize("boolop", list(BOOLOP))
@pytest.mark.parametrize("negate", [False, True])
def test_setp_boolop(boolop, negate):
    # PTX 9.7.6.2: p = BoolOp(a cmp b, {!}c), q = BoolOp(!(a cmp b), {!}c); c = bit 0 of the third input
    bang = "!" if negate else ""
    snippet = (f"and.b32 %r6, %r3, 1;\n  setp.ne.u32 %p3, %r6, 0;\n"
               f"  setp.lt.s32.{boolop} %p1|%p2, %r1, %r2, {bang}%p3;\n"
               "  selp.u32 %r4, 1, 0, %p1;\n  selp.u32 %r5, 2, 0, %p2;\n  or.b32 %r4, %r4, %r5;")

    def ref(a, b, c):
        t = s32(a) < s32(b)
        q = bool(c & 1) != negate
        return int(BOOLOP[boolop](t, q)) | int(BOOLOP[boolop](not t, q)) << 1
    check(snippet, ref, A32, B_NEAR, C32)


def test_selp_slct_set():
    check("and.b32 %r6, %r3, 1;\n  setp.eq.u32 %p1, %r6, 1;\n  selp.b32 %r4, %r1, %r2, %p1;",
          lambda a, b, c: a if c & 1 else b, A32, B32, C32)
    # slct: d = c >= 0 ? a : b with c read as .s32
    check("slct.u32.s32 %r4, %r1, %r2, %r3;", lambda a, b, c: a if s32(c) >= 0 else b, A32, B32, C32)
    check("slct.s32.s32 %r4, %r1, %r2, %r3;", lambda a, b, c: a if s32(c) >= 0 else b, A32, B32, C32)
    # set: 0xFFFFFFFF for true with an integer destination
    check("set.lt.u32.s32 %r4, %r1, %r2;", lambda a, b, c: M32 if s32(a) < s32(b) else 0, A32, B_NEAR)
    check("set.hi.u32.u32 %r4, %r1, %r2;", lambda a, b, c: M32 if a > b else 0, A32, B_NEAR)


# ------------------------------------------------------------------------------------------------ 9.7.9 mov, cvt

def test_mov_pack_unpack():
    check("mov.b64 %rd10, {%r1, %r2};\n  shr.u64 %rd11, %rd10, 16;\n  cvt.u32.u64 %r4, %rd11;",
          lambda a, b, c: (b << 32 | a) >> 16, A32, B32)          # {lo, hi}: the first register is bits 0-31
    check("mov.b64 %rd10, {%r1, %r2};\n  mov.b64 {%r5, %r6}, %rd10;\n  sub.u32 %r4, %r6, %r5;",
          lambda a, b, c: b - a, A32, B32)
    check("mov.b32 {%h1, %h2}, %r1;\n  mov.b32 %r4, {%h2, %h1};", lambda a, b, c: (a & 0xFFFF) << 16 | a >> 16, A32)
    check("mov.b32 {%h1, _}, %r1;\n  cvt.u32.u16 %r4, %h1;", lambda a, b, c: a & 0xFFFF, A32)


CVT32 = [
    # narrowing then widening through a 16-bit register
    ("cvt.u16.u32 %h1, %r1;\n  cvt.u32.u16 %r4, %h1;", lambda a: a & 0xFFFF),
    ("cvt.u16.u32 %h1, %r1;\n  cvt.s32.s16 %r4, %h1;", lambda a: sx(a, 16)),
    # the source type narrower than the register: the low 8 bits, sign- or zero-extended (9.7.9.21)
    ("cvt.s32.s8 %r4, %r1;", lambda a: sx(a, 8)),
    ("cvt.u32.u8 %r4, %r1;", lambda a: a & 0xFF),
    ("cvt.u32.s8 %r4, %r1;", lambda a: sx(a, 8)),
    # a destination register wider than the type: sign-extended for signed types, zero-extended otherwise
    ("cvt.s8.s32 %r4, %r1;", lambda a: sx(a, 8)),
    ("cvt.u8.u32 %r4, %r1;", lambda a: a & 0xFF),
    ("cvt.s16.u32 %r4, %r1;", lambda a: sx(a, 16)),
    # .sat: clamp to the destination's range
    ("cvt.sat.s8.s32 %r4, %r1;", lambda a: clamp(s32(a), -128, 127)),
    ("cvt.sat.u8.s32 %r4, %r1;", lambda a: clamp(s32(a), 0, 255)),
    ("cvt.sat.u8.u32 %r4, %r1;", lambda a: min(a, 255)),
    ("cvt.sat.s16.s32 %r4, %r1;", lambda a: clamp(s32(a), -32768, 32767)),
    ("cvt.sat.u16.s32 %r4, %r1;", lambda a: clamp(s32(a), 0, 65535)),
    ("cvt.sat.u32.s32 %r4, %r1;", lambda a: max(s32(a), 0)),
    ("cvt.sat.s32.u32 %r4, %r1;", lambda a: min(a, 2**31 - 1)),
]


@pytest.mark.parametrize("snippet,ref", CVT32, ids=[s.split("\n")[-1].split()[0] + str(i) for i, (s, _) in
                                                    enumerate(CVT32)])
def test_cvt_integer(snippet, ref):
    check(snippet, lambda a, b, c: ref(a), A32)
    # worked: cvt.sat.s8.s32 of 200 is 127; of -300 is -128, sign-extended to 0xFFFFFF80
    if snippet == "cvt.sat.s8.s32 %r4, %r1;":
        check(snippet, lambda a, b, c: {200: 127, M32 - 299: 0xFFFFFF80}[a], [200, M32 - 299])


CVT64 = [
    ("cvt.u32.u64 %r1, %rd21;\n  cvt.u64.s32 %rd24, %r1;", lambda a: s32(a)),
    ("cvt.u32.u64 %r1, %rd21;\n  cvt.s64.u32 %rd24, %r1;", lambda a: a & M32),
    ("cvt.sat.s32.s64 %r4, %rd21;\n  cvt.u64.u32 %rd24, %r4;", lambda a: clamp(s64(a), -2**31, 2**31 - 1) & M32),
    ("cvt.sat.u32.s64 %r4, %rd21;\n  cvt.u64.u32 %rd24, %r4;", lambda a: clamp(s64(a), 0, M32)),
    ("cvt.sat.s64.u64 %rd24, %rd21;", lambda a: min(a, 2**63 - 1)),
    ("cvt.sat.u64.s64 %rd24, %rd21;", lambda a: max(s64(a), 0)),
    ("cvt.s16.s64 %r4, %rd21;\n  cvt.s64.s32 %rd24, %r4;", lambda a: sx(a, 16)),
]


@pytest.mark.parametrize("snippet,ref", CVT64, ids=[f"cvt64_{i}" for i in range(len(CVT64))])
def test_cvt_integer_64(snippet, ref):
    check(snippet, lambda a, b, c: ref(a), A64, wide=True)


# ------------------------------------------------------------------------------------------------ float subset

def _finite_f32(n, lo=-30, hi=30):
    """Random f32 bit patterns with exponents in [lo, hi], plus subnormals and signed zeros."""
    sign = RNG.integers(0, 2, n)
    exp = RNG.integers(lo + 127, hi + 128, n)
    man = RNG.integers(0, 1 << 23, n)
    bits = (sign << 31 | exp << 23 | man).astype(np.uint64)
    bits[:6] = [0x00000001, 0x80000003, 0x007FFFFF, 0x00000000, 0x80000000, 0x00400000]  # subnormals, +-0
    return [int(x) for x in bits]


def _f32(bits):
    return np.array(bits, np.uint32).view(np.float32)


@pytest.mark.parametrize("form,fn", [("add.rn.f32", np.add), ("add.f32", np.add), ("mul.rn.f32", np.multiply),
                                     ("sub.rn.f32", np.subtract)])
def test_f32_round_to_nearest(form, fn):
    # numpy's float32 arithmetic is IEEE 754 round-to-nearest-even with subnormals (no .ftz), the PTX default
    a, b = _finite_f32(96), list(np.roll(_finite_f32(96), 13))
    b[6:12] = [0x00000001, 0x80000001, 0x3F800000, 0xBF800000, 0x7F7FFFFF, 0x00800000]
    a[6:12] = [0x00000001, 0x00000001, 0x33800000, 0x33800001, 0x7F7FFFFF, 0x80000001]
    with np.errstate(over="ignore"):   # max finite + max finite: RN overflows to +inf
        want = fn(_f32(a), _f32(b)).view(np.uint32)
    got = alu(f"{form} %r4, %r1, %r2;", a, b)
    assert list(got) == list(want)
    # worked: 1 + 2^-24 is a tie between 1 and 1 + 2^-23: even mantissa wins -> 1.0 (0x3F800000);
    # 1 + (2^-24 + 2^-47) rounds up -> 0x3F800001
    if form == "add.rn.f32":
        assert list(alu("add.rn.f32 %r4, %r1, %r2;", [0x3F800000, 0x3F800000], [0x33800000, 0x33800001])) == \
            [0x3F800000, 0x3F800001]


@pytest.mark.parametrize("dst", ["f16x2", "bf16x2"])
def test_cvt_rn_packed_from_f32(dst):
    # PTX 9.7.9.21: cvt.rn.{f16x2,bf16x2}.f32 d, a, b puts a's conversion in the upper half, b's in the lower
    a, b = _finite_f32(96, -20, 20), list(np.roll(_finite_f32(96, -20, 20), 29))
    a[6:10] = [0x477FF000, 0x477FE000, 0x3F801000, 0x3F803000]   # 65520 (f16 overflow to inf), 65504; ties
    b[6:10] = [0x3F808000, 0x3F818000, 0x33800000, 0xC7800000]   # bf16 ties 1 + 2^-8, 1 + 3*2^-8; 2^-24; -65536
    np_t = np.float16 if dst == "f16x2" else ml_dtypes.bfloat16
    with np.errstate(over="ignore"):
        hi = _f32(a).astype(np_t).view(np.uint16).astype(np.uint32)
        lo = _f32(b).astype(np_t).view(np.uint16).astype(np.uint32)
    got = alu(f"cvt.rn.{dst}.f32 %r4, %r1, %r2;", a, b)
    assert list(got) == list(hi << 16 | lo)
    # worked (f16): 65520 = 65504 + 16 is the midpoint to 2^16, which is past the largest finite: RN gives
    # +inf (0x7C00); 1 + 2^-11 + 2^-13 (0x3F801000 = 1.00048828125) is below the midpoint 1 + 2^-11: -> 1.0
    if dst == "f16x2":
        assert int(got[6]) >> 16 == 0x7C00 and int(got[8]) >> 16 == 0x3C00


def test_set_of_half_pairs_writes_each_half():
    # set.CmpOp.f16x2.f16x2 (cuda_fp16.hpp's h2 comparisons and __hisinf2): each half of d is 1.0 in the half format
    # where its halves compare true; a .u32 destination gets 0xffff per true half; a BoolOp applies to both halves
    body = """
  mov.u32 %r1, 0x3c00c000;
  cvt.u16.u32 %rs1, %r0;
  mov.b32 %r2, {%rs1, %rs1};
  and.b32 %r2, %r2, 0x7fff7fff;
  set.lt.f16x2.f16x2 %r3, %r1, %r2;
  setp.ne.u32 %p9, %r0, 0;
  set.ge.and.u32.f16x2 %r5, %r1, %r2, %p9;
  st.global.u32 [%rd1], %r3;
  st.global.u32 [%rd1+128], %r5;
  ret;
"""
    out = run(body, out_words=64, regs="  .reg .b32 %r<8>;\n  .reg .b16 %rs<4>;\n  .reg .b64 %rd<4>;\n"
                                       "  .reg .pred %p<10>;\n")
    def h(bits):
        return float(np.array([bits], np.uint16).view(np.float16)[0])
    lo_a, hi_a = h(0xc000), h(0x3c00)   # -2.0 in the low half, 1.0 in the high half
    for t in range(32):
        x = h(t & 0x7fff)
        want_lt = (0x3c00 if lo_a < x else 0) | ((0x3c00 if hi_a < x else 0) << 16)
        want_ge = ((0xffff if lo_a >= x else 0) | ((0xffff if hi_a >= x else 0) << 16)) if t != 0 else 0
        assert (int(out[t]), int(out[32 + t])) == (want_lt, want_ge), t
