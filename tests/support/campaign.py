"""Hostile-input campaign (issue 13 "Hostile inputs", issue 17): every public entry point and CLI subcommand,
called as a careless or hostile user would.

The rule it holds tcemu to (README, "Bad input"): a bad input raises TcemuError (a ValueError) whose `field`
names the parameter, never another exception (no TypeError, no numba or numpy error); a call never hangs, never
blows up memory, never crashes the process, and no trace file is ever unpickled. The CLI turns every such
error into one line and a nonzero exit, without a traceback.

Each call is classed: "accepted" (valid input, a result), "clean error" (TcemuError naming its field), and the
failures "silently accepted" (an input the registry marks bad gave a result), "other exception", "hang" (over
HANG_SECONDS) and "crash" (a process died: test_crash_isolation runs those cases in subprocesses).

The registry: one `entry(...)` line per public function. Every parameter is a `Param`: valid values, values
that must be refused ("bad"), and harmless variants ("odd": numpy scalars, read-only and non-contiguous
arrays). Each call keeps every parameter valid, or makes exactly one of them bad, or one of them odd. To add
a public function:

    entry("check.whole_tile", check_tile, WRITTEN, DESC90, dtype=DTYPE90, arch=Const("sm90"))

ci profile: a few calls per entry (seconds in all); HYPOTHESIS_PROFILE=campaign: CAMPAIGN_CALLS calls in all,
spread over the entries by weight. TCEMU_CAMPAIGN_REPORT=path writes the tally (calls per entry and
outcome) as JSON.
"""
import contextlib
import faulthandler
import io
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tcemu
from tcemu import TcemuError
from tcemu.layout import banks, fragments, tma
from tcemu.tools import check, explain
from tcemu.arith import formats
from tcemu.traces import inputs as kernel_inputs, seeds, archive as traces
from tcemu.hopper import sparse
from tcemu.cli import main as cli_main
from tcemu.layout.descriptors import SwizzleMode, UmmaDescriptor
from tcemu.arith.fdp import FdpUnit, RZ, decode_operand, fused_dot, grouped_dot, integer_dot
from tcemu.testing.fuzz import campaign as fuzz_campaign, random_case
from tcemu.blackwell.instr import InstrDescriptor
from tcemu.tools.operand import instruction_k, operand_spec
from tcemu.testing.oracle import oracle
import tcemu.ptx as tptx
from tcemu.ptx import tensormap
from tcemu.serve import api as serve_api, ptxrun as serve_api_ptx
import tcemu.frontends.triton as ttriton
from tcemu.layout.smem import SharedMemory
from tcemu.blackwell.tmem import TensorMemory

CAMPAIGN = os.environ.get("HYPOTHESIS_PROFILE") == "campaign"
CAMPAIGN_CALLS = 60_000   # in all, under HYPOTHESIS_PROFILE=campaign
CI_CALLS = int(os.environ.get("TCEMU_CI_CALLS", 10))  # per entry of weight 1 in the ci profile
HANG_SECONDS = 10.0
HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.join(HERE, "..", "traces")

TALLY = Counter()         # (entry, outcome) -> calls
FAILURES = ("silently accepted", "other exception", "hang", "crash")


# ---- parameters: valid, bad (must be refused) and odd (harmless variants) values ----

class Hang(BaseException):
    """Raised by the alarm inside a call that runs past HANG_SECONDS (BaseException: no handler swallows it)."""


@dataclass
class Param:
    valid: st.SearchStrategy
    bad: st.SearchStrategy = None
    odd: st.SearchStrategy = None


def Const(value):
    return Param(st.just(value))


NAN, INF = float("nan"), float("inf")


class BigInt(int):
    """An int past Python's 4,300-digit str() limit whose repr still works (Hypothesis prints examples):
    str() and format() of it raise as for any such int, which is what tcemu's messages must avoid."""

    def __repr__(self):
        return f"BigInt({'-' if self < 0 else ''}2^{self.bit_length()})"


HUGE = BigInt(10 ** 5000)
# Values of the wrong Python type for almost any parameter.
WRONG_ARRAY = np.array([1, 2])  # wrong for scalars; arrays may take it
WRONG = [None, "x", "False", "", b"\x00", 1.5, NAN, INF, -INF, [], {}, (), object(), 1j, HUGE, BigInt(-HUGE),
         WRONG_ARRAY, np.float64(2.0), "0x" + "f" * 5000, "a" * 10_000]


def _same(a, b):
    return a is b or (type(a) is type(b) and not isinstance(a, np.ndarray) and a == b)


def _wrong(*extra, exclude=()):
    return st.sampled_from([w for w in WRONG if not any(_same(w, e) for e in exclude)] + list(extra))


def Flag():
    """A bool parameter: bool or numpy bool; ints, strings and None are refused."""
    return Param(st.booleans(), _wrong(0, 1, "True", np.int64(1), np.array([True]), [True]),
                 st.booleans().map(np.bool_))


def Int(valid, lo=None, hi=None, bad=()):
    """An int parameter: `valid` (a list or strategy); refused: wrong types, floats, bools, and ints outside
    [lo, hi] where the contract states them."""
    valid = st.sampled_from(valid) if isinstance(valid, (list, tuple)) else valid
    out = [True, False, 8.0, "8", np.float32(8.0), np.array(8)] + list(bad)
    if lo is not None:
        out += [lo - 1, lo - 2 ** 40, BigInt(-HUGE)]
    if hi is not None:
        out += [hi + 1, hi + 2 ** 64, HUGE]
    return Param(valid, _wrong(*out), valid.filter(lambda v: -2 ** 63 <= v < 2 ** 63).map(np.int64) |
                 valid.filter(lambda v: 0 <= v < 2 ** 31).map(np.uint32))


BAD_NAMES = ["", "x", "nonsense", "\x00", "bf17", "sm80", "e9m9", "a" * 5000, b"bf16", 7, ["bf16"], None, 1.5]


def Name(choices, bad=()):
    """A name parameter: one of `choices`; refused: unknown names and wrong types."""
    return Param(st.sampled_from(choices), st.sampled_from(BAD_NAMES + list(bad)))


def _readonly(a):
    a = np.array(a)
    a.setflags(write=False)
    return a


def _strided(a):
    """The same values in a non-contiguous view."""
    a = np.asarray(a)
    if a.ndim == 0 or a.size == 0:
        return a
    wide = np.repeat(a, 2, axis=-1)
    return wide[..., ::2]


NUMBERS = (1.5, NAN, INF, -INF, np.float64(2.0), [], ())  # valid where a parameter takes any numbers


def Arr(valid, bad=(), as_float=True, as_object=True, ok=(), wrong=True):
    """An array parameter: `valid` arrays; odd: read-only, non-contiguous and Fortran-ordered copies, lists;
    bad: `bad` (a strategy or list) plus float and object copies (when those are refused) and wrong types
    other than those in `ok` (values the parameter legitimately takes, e.g. NUMBERS)."""
    bad_s = st.sampled_from(list(bad)) if isinstance(bad, (list, tuple)) else bad
    exclude = (None, WRONG_ARRAY, [], ()) + tuple(ok)
    options = [_wrong(np.array(["a", "b"]), np.array([[1], [2, 3]], dtype=object), exclude=exclude)] if wrong else []
    if bad_s is not None and not (isinstance(bad, (list, tuple)) and not bad):
        options.append(bad_s)
    if as_float:
        options.append(valid.map(lambda a: np.asarray(a).astype(np.float64) + 0.5))
    if as_object:
        options.append(valid.map(lambda a: np.asarray(a).astype(object) * 1 if np.asarray(a).size else
                                 np.array([object()])).filter(lambda a: a.dtype == object))
    odd = valid.map(_readonly) | valid.map(_strided) | valid.map(np.asfortranarray)
    return Param(valid, st.one_of(options), odd)


def Opt(param):
    """None or the parameter's values (None is then valid, never bad)."""
    return Param(st.none() | param.valid, param.bad.filter(lambda v: v is not None) if param.bad is not None else None,
                 param.odd)


# ---- shared fixtures: memories, descriptors, tiles ----

RNG = np.random.default_rng(17)
FULL90 = SharedMemory(data=RNG.integers(0, 256, 228 * 1024, dtype=np.uint8))
FULL100 = SharedMemory("sm100", data=RNG.integers(0, 256, 228 * 1024, dtype=np.uint8))
TMEM = TensorMemory()
TMEM.write(0, np.arange(128)[:, None], np.arange(512)[None, :], RNG.integers(0, 1 << 32, (128, 512), dtype=np.uint64))
TMEM.write_scales(400, RNG.integers(0, 256, (256, 4)))  # columns 400-407: scale factors, duplicated as PTX wants

D90 = [tcemu.GmmaDescriptor(0x400, 16, 1024, 0, "128B"), tcemu.GmmaDescriptor(0x480, 128, 256),
       tcemu.GmmaDescriptor(0x1000, 16, 512, 0, "64B"), tcemu.GmmaDescriptor(0x2000, 0x800, 0x400, 3, "32B")]
D100 = [UmmaDescriptor(0x400, 16, 1024, 0, "128B", version=1), UmmaDescriptor(0x4000, 128, 256, version=1),
        UmmaDescriptor(0x2000, 1024, 512, 0, "128B_base32B", version=1)]
BAD_DESC = [-1, 1 << 64, HUGE, "0xzz", "0x" + "f" * 5000, "9" * 5000, 1.5, NAN, None, b"\x00", [0x40], True,
            np.float64(64.0)]
DESC90 = Param(st.sampled_from(D90 + [d.encode() for d in D90] + [hex(d.encode()) for d in D90]),
               st.sampled_from(BAD_DESC), st.sampled_from([np.uint64(d.encode()) for d in D90]))
DESC100 = Param(st.sampled_from(D100 + [d.encode() for d in D100]), st.sampled_from(BAD_DESC + [D90[0]]))
DTYPE90 = Name(["bf16", "f16", "tf32", "e4m3", "e5m2", "s8", "u8", "b1"])
MAJOR = Name(["K", "MN"], bad=["KM", "row"])
ARCH = Name(["sm90", "sm100"])
ROWS = Int([8, 16, 64, 128], lo=1, bad=[0, -8])
KS = Int([8, 16, 32, 256], lo=1, bad=[0, -16])
SMEM_ADDR = Int(st.integers(0, 228 * 1024 - 64), lo=-(1 << 62), hi=1 << 62)
SWIZZLE_NAME = Name(["none", "32B", "64B", "128B"], bad=["16B", "256B", "sw7"])


def _tile(rows, k, hi):
    return st.just(None).map(lambda _: RNG.integers(0, hi, (rows, k)))


def _instr_descs():
    from tcemu.testing.strategies import tcgen05_forms
    return tcgen05_forms(cta_group=1).filter(lambda d: d.m * d.n <= 128 * 64)


# 1 << 32 is the 64-bit runtime form of descriptor 1 (CuTe's make_runtime_instr_desc: value << 32): not bad
IDESC = Param(_instr_descs(), st.sampled_from([-1, (1 << 32) | 1, 1 << 64, "0xzz", 1.5, None, HUGE, "x" * 500,
                                               object()]),
              _instr_descs().map(lambda d: d.encode()))


# ---- entry points ----

@dataclass
class Entry:
    name: str
    fn: object
    args: tuple
    kwargs: dict
    weight: float = 1.0
    check: object = None    # fn(result) -> None: extra invariants on accepted results
    reports: object = None  # fn(result) -> bool: the result itself reports an error (lint findings, explain text)


ENTRIES = []


def entry(name, fn, *args, weight=1.0, check=None, reports=None, **kwargs):
    ENTRIES.append(Entry(name, fn, args, kwargs, weight, check, reports))


def _has_error_finding(findings):
    return any(f.severity == "error" for f in findings)


def _fresh(method):
    """Call method on a fresh SharedMemory (sm90): writes do not leak between calls."""
    return lambda *a, **kw: getattr(SharedMemory(), method)(*a, **kw)


# descriptors and addressing
entry("GmmaDescriptor.decode", tcemu.GmmaDescriptor.decode, DESC90)
entry("UmmaDescriptor.decode", UmmaDescriptor.decode, DESC100)
entry("GmmaDescriptor.encode",
      lambda *f: tcemu.GmmaDescriptor(*f).encode(),
      Int(st.integers(0, 0x3FFF).map(lambda x: 16 * x), lo=0, hi=0x3FFF0, bad=[8, 0x40000]),
      Int([16, 128, 1024], lo=0, hi=0x3FFF0, bad=[1]), Int([256, 1024], lo=0, hi=0x3FFF0, bad=[-16]),
      Int([0, 3, 7], lo=0, hi=7), SWIZZLE_NAME)
entry("GmmaDescriptor.validate", lambda d, arch, major: tcemu.GmmaDescriptor.decode(d).validate(arch, major),
      DESC90, Name(["sm90"]), Opt(MAJOR), reports=_has_error_finding)
entry("SwizzleMode.parse", SwizzleMode.parse, Param(st.sampled_from(["none", "32B", "64B", "128B", "128B_base32B",
                                                                     "sw128", 0, 128, SwizzleMode.B64]),
                                                    st.sampled_from(["16B", "x", "", None, 1.5, HUGE, -1, 129, [],
                                                                     "a" * 5000, True, b"128B"])))
entry("operand_addresses", tcemu.operand_addresses, DESC90, rows=ROWS, k=KS, dtype=DTYPE90, major=MAJOR,
      arch=Const("sm90"))
entry("operand_addresses(sm100)", tcemu.operand_addresses, DESC100, rows=ROWS, k=KS,
      dtype=Name(["bf16", "tf32", "e4m3", "e2m1", "u8"]), major=MAJOR, arch=Const("sm100"))
entry("core_matrix_rows", tcemu.core_matrix_rows, DESC90, rows=ROWS, k=KS, dtype=DTYPE90, major=MAJOR, arch=ARCH)
entry("footprint", tcemu.footprint, DESC90, rows=ROWS, k=KS, dtype=DTYPE90, major=MAJOR)
entry("canonical_layout", tcemu.canonical_layout, DESC90, dtype=Opt(DTYPE90), major=MAJOR, arch=Const("sm90"))

# shared memory
RAW_BAD = [np.zeros(300_000, np.uint8), np.array(["ab"]), np.array([2 ** 70]), "x", object(), {}, HUGE,
           np.array([object()]), np.array([1 + 1j])]  # raw bytes: any numeric array is data, these are not
entry("SharedMemory", SharedMemory, Name(["sm90", "sm100"]),
      Opt(Arr(st.integers(1, 64).map(lambda n: RNG.integers(0, 256, n, dtype=np.uint8)), RAW_BAD[:-1],
              as_float=False, as_object=False, wrong=False)))
entry("SharedMemory.read", FULL90.read, SMEM_ADDR, Int([0, 1, 16, 4096], lo=0, bad=[-1]), strict=Flag())
entry("SharedMemory.read(fresh)", _fresh("read"), SMEM_ADDR, Int([1, 16], lo=0), strict=Flag())
entry("SharedMemory.write", _fresh("write"), SMEM_ADDR,
      Arr(st.integers(1, 64).map(lambda n: RNG.integers(0, 256, n, dtype=np.uint8)), RAW_BAD[:-1],
          as_float=False, as_object=False, wrong=False))
entry("SharedMemory.gather", FULL90.gather,
      Arr(st.integers(1, 16).map(lambda n: 4 * RNG.integers(0, 1000, n)), [np.array([-4]), np.array([1 << 40])],
          ok=([], ())),
      Name(["u8", "bf16", "tf32", "f32", "s32"], bad=["b1"]), strict=Flag())
entry("SharedMemory.scatter", _fresh("scatter"),
      Arr(st.integers(1, 16).map(lambda n: 4 * RNG.permutation(1000)[:n])),
      Arr(st.integers(1, 16).map(lambda n: RNG.integers(0, 256, 1)),
          [np.array([256]), np.array([-200]), np.array([1.0], np.float16)], as_float=True),
      Name(["u8", "s8"]))
entry("SharedMemory.scatter_bytes", _fresh("scatter_bytes"),
      Arr(st.just(np.array([0x400, 0x410]))),
      Arr(st.just(np.array([[1, 2], [3, 4]])), [np.array([[256, 0], [0, 0]]), np.array([1, 2, 3]),
                                                np.array([[-1, 0], [0, 0]])]))
entry("SharedMemory.write_operand", _fresh("write_operand"), DESC90,
      Arr(st.sampled_from([(16, np.float16), (16, ml_dtypes.bfloat16)]).map(
          lambda t: RNG.standard_normal((64, t[0])).astype(t[1])),
          [np.zeros((64, 16), np.float32), np.zeros(16), np.full((64, 16), 1 << 20)], as_float=True, as_object=True),
      dtype=Name(["bf16", "f16"]), major=Const("K"), padded=Opt(Flag()))
entry("SharedMemory.read_operand", FULL90.read_operand, DESC90, rows=ROWS, k=KS, dtype=DTYPE90, major=MAJOR,
      padded=Opt(Flag()))
entry("SharedMemory(sm100).write_operand e2m1",
      lambda d, v, padded: SharedMemory("sm100").write_operand(d, v, dtype="e2m1", padded=padded), DESC100,
      Arr(st.just(None).map(lambda _: RNG.integers(0, 16, (128, 64))),
          [np.full((128, 64), 16), np.zeros((128, 64), ml_dtypes.float6_e2m3fn)]), Opt(Flag()))

# registers
entry("to_a_registers", fragments.to_a_registers,
      Arr(st.just(None).map(lambda _: RNG.integers(0, 1 << 16, (64, 16))), [np.full((64, 16), 1 << 16),
                                                                           np.zeros((64, 15))]), Name(["bf16"]))
entry("from_a_registers", fragments.from_a_registers,
      Arr(st.just(None).map(lambda _: RNG.integers(0, 1 << 32, (128, 4), dtype=np.uint64)),
          [np.zeros((128, 3)), np.full((128, 4), -1), np.full((128, 4), 1 << 32)]), DTYPE90)
entry("to_d_registers", fragments.to_d_registers,
      Arr(st.sampled_from([8, 16, 256]).map(lambda n: RNG.integers(0, 1 << 16, (64, n))),
          [np.zeros((63, 8)), np.zeros((64, 12)), np.full((64, 8), 1 << 32)]), Name(["f32", "f16", "s32"]))
entry("from_d_registers", fragments.from_d_registers,
      Arr(st.just(None).map(lambda _: RNG.integers(0, 1 << 32, (128, 8), dtype=np.uint64)),
          [np.zeros((128, 7)), np.full((128, 8), -1)]), Int([16], lo=8, hi=256, bad=[12]), Name(["f32", "s32"]))

# wgmma
A_REGS = Param(st.none(), st.sampled_from([RNG.standard_normal((128, 4)), np.zeros((128, 3), np.uint32),
                                           np.full((128, 4), -1), "regs"]))
entry("wgmma", lambda smem, da, db, **kw: tcemu.wgmma(smem, da, db, **kw), Param(st.just(FULL90),
      st.sampled_from([FULL100, np.zeros(16, np.float32), "smem", None])), DESC90, DESC90,
      shape=Name(["m64n8k16", "m64n16k16", "m64n64k16"], bad=["m64n7k16", "m128n8k16", "m64n8k16" * 100]),
      dtype_a=Name(["bf16", "f16"]), dtype_b=Const("bf16"), dtype_d=Const("f32"),
      trans_a=Flag(), trans_b=Flag(), scale_d=Flag(), satfinite=Param(st.just(False), st.sampled_from(
          ["False", 0, None, True])),
      scale_a=Int([1, -1], lo=-1, hi=1, bad=[0]), scale_b=Int([1, -1], lo=-1, hi=1, bad=[2]),
      c=Opt(Arr(st.just(np.zeros((64, 8), np.float32)), [np.zeros((64, 8), np.float16), np.zeros((64, 9), np.float32)],
                as_float=False)), a_regs=A_REGS, weight=2)
entry("hopper.check_form", lambda *a: __import__("tcemu.hopper.wgmma").hopper.check_form(*a),
      Name(["m64n8k16", "m64n256k16"]), Const("bf16"), Const("bf16"), Const("f32"), Flag(), Flag(),
      Int([1, -1], lo=-1, hi=1, bad=[0]), Int([1, -1], lo=-1, hi=1, bad=[0]), Param(st.just(False),
                                                                                     st.sampled_from(["False", 1])))

# tcgen05
entry("InstrDescriptor.encode", lambda kind, a, b, m, n, **kw: InstrDescriptor(kind, a, b, m=m, n=n, **kw).encode(),
      Name(["f16"]), Name(["f16", "bf16"]), Const("f16"), Int([64, 128], lo=0, bad=[40, 8.5]),
      Int([8, 64, 256], lo=0, bad=[12, 1024]), negate_a=Flag(), transpose_b=Flag(), sparse=Param(
          st.just(False), st.sampled_from(["False", 2, None])),
      sparsity_selector=Int([0, 1, 3], lo=0, hi=3), max_shift=Int([0], lo=0, hi=3),
      a_scale_id=Int([0], lo=0, hi=3), k96=Param(st.just(False), st.sampled_from([2, "True", 1])))
entry("InstrDescriptor.decode", InstrDescriptor.decode,
      Param(st.integers(0, (1 << 32) - 1), st.sampled_from([-1, (1 << 32) | 1, 1 << 64, HUGE, "0xzz", "1" * 5000, 1.5,
                                                             None])),
      Name(["f16", "tf32", "i8", "f8f6f4", "mxf8f6f4", "mxf4", "mxf4nvf4"]))
SCALES = Arr(st.just(None).map(lambda _: RNG.integers(120, 130, (128, 1))), [np.full((128, 1), 256),
                                                                                np.full((128, 1), -1)])


def _tcgen05(idesc, da, db, scale, **kw):
    """tcgen05_mma on a full sm100 memory; `scale` (when given) is A's scale array, shaped for the kind (a
    kind that is not block-scaled must refuse it)."""
    if isinstance(idesc, InstrDescriptor) and idesc.kind in ("mxf8f6f4", "mxf4", "mxf4nvf4") and scale is not None:
        nsf = {"mxf8f6f4": 1, "mxf4": 2}.get(idesc.kind, 4)
        if isinstance(scale, np.ndarray) and scale.dtype.kind in "iu" and scale.shape == (128, 1):
            scale = np.repeat(scale, nsf, axis=1)
        kw.update(scale_a=scale, scale_b=np.full((idesc.n, nsf), 127), block_size_k=16 if nsf == 4 else None)
    elif scale is not None:
        kw.update(scale_a=scale)
    return tcemu.tcgen05_mma(FULL100, da, db, idesc, **kw)


entry("tcgen05_mma", _tcgen05, IDESC, DESC100, DESC100, Opt(SCALES), enable_input_d=Flag(),
      scale_input_d=Int([0], lo=0, hi=15, bad=[16, -1]), cta_group=Int([1], lo=1, hi=2, bad=[0, 3]), weight=2)
entry("tcgen05_mma(tmem)", lambda idesc, db, a_tmem, d_tmem, lanes: tcemu.tcgen05_mma(
    FULL100, None, db, idesc, tmem=TensorMemory() if lanes is None else TMEM, a_tmem=a_tmem, d_tmem=d_tmem,
    disable_output_lane=lanes), Param(st.just(InstrDescriptor("f16", "f16", "f16", m=128, n=16))), DESC100,
      Int([0, 8], lo=0, hi=(127 << 16) | 511, bad=[1 << 32]), Int([64, 200], lo=0, hi=(127 << 16) | 511),
      Opt(Arr(st.just(np.zeros(4, np.uint32)), [np.zeros(3), np.full(4, -1), np.full(4, 1 << 32)])))
entry("TensorMemory.read", TMEM.read, Int([0, 5], lo=0, bad=[1 << 32]),
      Arr(st.just(np.arange(8)), [np.array([-1]), np.array([128])]),
      Arr(st.just(np.arange(8)), [np.array([-1]), np.array([512]), np.arange(3)]))
entry("TensorMemory.write", lambda *a: TensorMemory().write(*a), Int([0, 64], lo=0),
      Arr(st.just(np.arange(4)), [np.array([-1]), np.array([200])]),
      Arr(st.just(np.arange(4)), [np.array([-5]), np.array([600])]),
      Arr(st.just(np.arange(4) * 7), [np.array([-1]), np.array([1 << 32]), np.arange(5)]))
entry("TensorMemory.read_d", TMEM.read_d, Int([0, 16], lo=0), Int([128, 64], lo=1, bad=[96, 512]),
      Int([8, 64], lo=8, hi=256, bad=[12]), Name(["f32", "f16", "s32"], bad=["bf16", "f64"]),
      Int([1], lo=1, hi=2, bad=[0, 3]))
entry("TensorMemory.write_d", lambda *a, **kw: TensorMemory().write_d(*a, **kw), Int([0], lo=0),
      Arr(st.just(np.zeros((128, 8), np.uint32)), [np.full((128, 8), -1), np.zeros((127, 8))]),
      Int([128], lo=1), Name(["f32", "s32"], bad=["bf16"]),
      keep_lanes=Opt(Arr(st.just(np.zeros(128, bool)), [np.zeros(128), np.zeros(127, bool)], as_float=False)))


def _a_round_trip(addr, vals, bits):
    tm = TensorMemory()
    tm.write_a(addr, vals, bits)
    return tm.read_a(addr, 128, np.shape(vals)[1] if np.ndim(vals) == 2 else 8, bits)


entry("TensorMemory.write_a/read_a", _a_round_trip,
      Int([0, 16], lo=0), Arr(st.just(RNG.integers(0, 256, (128, 8))), [np.full((128, 8), 256),
                                                                         np.zeros((128, 8 * 512))]),
      Int([8], lo=4, hi=32, bad=[5, 7]))
entry("TensorMemory.write_scales", lambda *a, **kw: TensorMemory().write_scales(*a, **kw), Int([0, 256], lo=0),
      Arr(st.just(RNG.integers(0, 256, (128, 2))), [np.full((128, 2), 256), np.zeros((128, 5)),
                                                    np.zeros((300, 1))]), sf_id=Int([0, 1, 2], lo=0, hi=3, bad=[4]))
entry("TensorMemory.read_scales", TMEM.read_scales, Int([400, 401], lo=0), Int([128, 256], lo=1, hi=256),
      Int([1, 2], lo=1, hi=4), Int([0, 1], lo=0, hi=3))
entry("tmem_address", tcemu.tmem_address, Int([0, 127], lo=0, hi=127), Int([0, 511], lo=0, hi=511,
                                                                             bad=[65536 + 5]))

# banks
OPS = Name(["ld.shared.b32", "ld.shared.v4.b32", "st.shared.v2.b64", "ldmatrix.x4", "lds.128"],
           bad=["ld.shared.b33", "ldmatrix.x3", "ld.shared.v8.b32"])
entry("bank_conflicts", tcemu.bank_conflicts, OPS,
      Arr(st.just(None).map(lambda _: 16 * RNG.integers(0, 256, 32)), [np.arange(31), np.full(32, 1 << 63, np.uint64)]),
      mask=Int([0xFFFFFFFF], lo=0, hi=(1 << 32) - 1), arch=Const("sm90"))
entry("wavefronts_batch", banks.wavefronts_batch, OPS,
      Arr(st.integers(1, 8).map(lambda n: 16 * RNG.integers(0, 256, (n, 32))), [np.zeros((2, 31)), -np.ones((2, 32))]),
      Opt(Param(st.just(None), st.sampled_from([np.zeros(1), np.array([1 << 32]), np.array([-1]), "x",
                                                np.zeros(0, np.int64)]))), weight=0.5)
entry("pattern_from_expression", banks.pattern_from_expression,
      Param(st.sampled_from(["(t % 8) * 128 + (t // 8) * 16", "t * 4", "t << 4 ^ t"]),
            st.sampled_from(["__import__('os')", "t ** 2", "(" * 300 + "t" + ")" * 300, "+".join(["t"] * 400),
                             "((t*t)*(t*t))" * 1 + "*" + "*".join(["(t<<63)"] * 40), "t // 0", "t << 99", "x",
                             "a" * 5000, "9" * 5000, None, 7, b"t", "lambda: 0", "[t]", "t if t else 1",
                             "1.5 * t", "t.real"])))
entry("pattern_from_layout", banks.pattern_from_layout, Param(st.sampled_from([(8, 4), (32,), [4, 8]]),
                                                              st.sampled_from([(8,), (8, 4.0), (0, 32), "x", None,
                                                                               (HUGE,), (-1, 32)])),
      Param(st.sampled_from([(64, 4), (4,), [1, 4]]), st.sampled_from([(NAN, 4), "x", (1,) * 9])),
      element_bytes=Int([1, 4], lo=1, hi=16), base=Int([0, 1024], lo=0, hi=1 << 32, bad=[NAN]))
entry("pattern_from_descriptor", banks.pattern_from_descriptor, DESC90,
      Arr(st.just(np.arange(32) % 8), [np.arange(31), np.full(32, -1)]),
      Arr(st.just(np.zeros(32, np.int64)), [np.arange(33)]), tile_rows=ROWS, tile_k=Int([64], lo=1),
      dtype=Name(["bf16"]), major=Const("K"))
entry("core_matrix_banks", banks.core_matrix_banks, DESC90, rows=ROWS, k=KS, dtype=DTYPE90, major=MAJOR)

# TMA
TENSOR = Arr(st.sampled_from([(16, 64), (2, 8, 32)]).map(lambda s: RNG.integers(0, 1 << 16, s).astype(np.uint16)),
             [np.zeros((8, 8), object), np.zeros((4,) * 6, np.uint8), np.zeros((8, 8), "U2")],
             as_float=False, as_object=False)
entry("tma_load", lambda *a, **kw: tcemu.tma_load(SharedMemory(), *a, **kw), Int([0x400, 0x800], lo=0, bad=[0x440]),
      TENSOR, box=Param(st.sampled_from([[8, 8], [16, 2, 2]]), st.sampled_from([[8], [300, 8], [8.0, 8], "x",
                                                                                 [8, -1], None, [HUGE, 8]])),
      coords=Param(st.sampled_from([[0, 0], [0, 0, 0], [16, 2]]), st.sampled_from([[NAN, 0], [1 << 40, 0], "0"])),
      swizzle=SWIZZLE_NAME, element_strides=Opt(Param(st.sampled_from([[1, 1], [1, 2, 1]]),
                                                      st.sampled_from([[0, 1], [1, 9], 1]))),
      oob_fill=Param(st.just("zero"), st.sampled_from(["nan", np.array(["zero"]), None])))
entry("tma.tensor_view", tma.tensor_view,
      Param(st.just(np.arange(4096, dtype=np.uint8)),
            st.sampled_from([np.arange(10.0), "x", np.zeros((4, 4), np.uint8)])),
      Int([0, 16], lo=0, hi=4096, bad=[5000]), Int([1, 2, 4], lo=1, hi=8, bad=[3]),
      Param(st.sampled_from([[16, 4], [8]]), st.sampled_from([[16, 1 << 30], [0, 4], [-1], [16] * 6, "x"])),
      Param(st.sampled_from([[64]]), st.sampled_from([[1 << 40], [-64], [64.5], "x"])))
entry("tma.capture_global_bytes", tma.capture_global_bytes, Int([0, 100, 4096], lo=0, hi=1 << 26))

# check, explain, pictures
WRITTEN = Arr(st.just(tcemu.operand_addresses(D90[0], rows=64, k=16, dtype="bf16")),
              [np.zeros(16, np.int64), np.full((64, 16), -1), np.full((8, 8), 1 << 50)])
entry("check_operand", check.check_operand, WRITTEN, DESC90, dtype=Name(["bf16"]), major=Const("K"),
      operand=Param(st.just("A"), st.sampled_from([None, 1, "x" * 100])), max_lines=Int([0, 8], lo=0, bad=[2.5]),
      arch=Const("sm90"))
entry("suggest_descriptor", check.suggest_descriptor, WRITTEN, dtype=Name(["bf16"]), major=MAJOR, arch=ARCH)
entry("explain", explain.explain, DESC90, dtype=DTYPE90, major=MAJOR, rows=ROWS, k=Opt(KS), arch=Const("sm90"),
      reports=explain.has_errors)
entry("explain(instr)", explain.explain, DESC100, instr=IDESC, kind=Param(st.none()),
      operand=Name(["a", "b"], bad=["c", "A" * 3]), reports=explain.has_errors)
entry("lint", explain.lint, DESC90, dtype=DTYPE90, major=MAJOR, rows=ROWS, k=Opt(KS), arch=ARCH,
      reports=_has_error_finding)
entry("instruction_k", explain.instruction_k, DTYPE90, ARCH)
entry("describe_instruction", explain.describe_instruction,
      Param(_instr_descs(), st.sampled_from([None, 1, "x", object()])))
entry("pictures.swizzle_atom", lambda mode, path, base_offset: __import__("tcemu.tools.pictures").pictures.swizzle_atom(
    mode, path, base_offset=base_offset), SWIZZLE_NAME,
      Param(st.just(None).map(lambda _: os.path.join(tempfile.gettempdir(), "tcemu_campaign_atom.png")),
            st.sampled_from(["/nonexistent/x.png", "noext", tempfile.gettempdir(), "", None, 7,
                             "/proc/tcemu.png", "x.jpg"])),
      Int([0, 3], lo=0, hi=7), weight=0.2)

# formats and the capture's generator
entry("formats.encode", formats.encode,
      Arr(st.just(None).map(lambda _: RNG.standard_normal(8)), [np.array(["1"]), np.array([1 + 2j])],
          as_float=False, as_object=False, ok=NUMBERS),
      Name(["bf16", "e4m3", "e2m1", "ue8m0", "tf32"]), rounding=Name(["rne", "rz", "rna"]), saturate=Flag())
# formats take object arrays of Python ints as bit patterns (exactly, range-checked): as_object=False
entry("formats.decode", formats.decode,
      Arr(st.just(None).map(lambda _: RNG.integers(0, 256, 8)), [np.array([256]), np.array([-1])], as_object=False),
      Name(["e4m3", "e5m2", "ue8m0", "e2m3"]))
entry("formats.from_bits", formats.from_bits, Arr(st.just(np.arange(16)), [np.array([1 << 16]), np.array([-1])],
                                                 as_object=False),
      Name(["bf16", "f16", "e4m3", "e2m1"], bad=["ue4m3"]))
entry("formats.decode_int", formats.decode_int, Arr(st.just(np.arange(16)), [np.array([256]), np.array([-1])],
                                                   as_object=False),
      Name(["s8", "u8"]))
entry("seeds.rnd", seeds.rnd, Int([0, 5, (1 << 64) - 1], lo=0, hi=(1 << 64) - 1), Int([0, 2, 3], lo=0),
      Arr(st.just(np.arange(8)), [np.zeros((1 << 25,), np.uint8)]))
entry("seeds.special_bits", seeds.special_bits, Int([0, 5], lo=0, hi=5, bad=[99]), Int([0, 7], lo=0, hi=7),
      Int([0, 1], lo=0, hi=1))
entry("seeds.operand_bits", seeds.operand_bits, Int([1, 99], lo=0), Int([0, 3, 20], lo=0, hi=20),
      Int([0, 1], lo=0), Name(["A", "B", "a"]), Int([8, 64], lo=1, hi=1 << 20))
entry("seeds.c_bits", seeds.c_bits, Int([1], lo=0), Int([0, 17], lo=0, hi=20), Int([8], lo=1, hi=1 << 20))

# fdp (the engine, for users who compose their own instruction)
_DEC = decode_operand(RNG.integers(0, 1 << 16, (4, 16)), "bf16")
UNIT = FdpUnit(25, "f32", 23, RZ)
entry("fdp.decode_operand", decode_operand, Arr(st.just(RNG.integers(0, 1 << 16, (4, 16))),
                                                 [np.full(3, 1 << 16), np.full(3, -1)]),
      Name(["bf16", "f16", "e4m3"]), Flag())
entry("fdp.fused_dot", fused_dot, Param(st.just(_DEC), st.sampled_from([_DEC[:, :8], _DEC.astype(np.int32),
                                                                         _DEC[..., :4], "A", None])),
      Param(st.just(_DEC), st.sampled_from([_DEC[:, :15], _DEC.astype(float), _DEC[None]])),
      Opt(Param(st.just(decode_operand(np.zeros((4, 4), np.uint32), "f32")), st.sampled_from([_DEC]))),
      Param(st.just(UNIT), st.sampled_from([None, (25, "f32", 23, 1), FdpUnit(25, "bf16", 7, RZ)])))
_E2M1 = decode_operand(RNG.integers(0, 16, (4, 32)), "e2m1")
_SCALE = decode_operand(np.full((4, 2), 127), "ue8m0")
entry("fdp.grouped_dot", grouped_dot, Param(st.just(_E2M1), st.sampled_from([_E2M1[:, :16], _DEC, None])),
      Param(st.just(_E2M1), st.sampled_from([_E2M1[:, :31], _E2M1.astype(np.float32)])), Opt(Param(st.none())),
      Param(st.just(_SCALE), st.sampled_from([_SCALE[:, :1], _SCALE[:3], "x"])),
      Param(st.just(_SCALE), st.sampled_from([_SCALE[..., :4], None])), Const(FdpUnit(35, "f32", 23, RZ, -139)),
      Int([16], lo=1, hi=32, bad=[0, 5, 64]))
entry("fdp.integer_dot", integer_dot, Arr(st.just(RNG.integers(-128, 128, (4, 32))), [np.zeros((4, 31))]),
      Arr(st.just(RNG.integers(-128, 128, (8, 32))), [np.zeros((8, 33)), np.full((8, 32), 1 << 40)]),
      Opt(Arr(st.just(np.zeros((4, 8), np.int64)), [np.zeros((4, 7))])), satfinite=Flag(), popc=Flag())

# fuzz, oracle
entry("fuzz.campaign", lambda **kw: fuzz_campaign(progress=None, **kw),
      seconds=Param(st.sampled_from([0, 0.01]), st.sampled_from([NAN, INF, -1, 1e400, 1e9, "1", None, True])),
      cases=Opt(Int([0, 2], lo=0, hi=10 ** 9)), seed=Int([0, 7], lo=0, hi=(1 << 64) - 1),
      arch=Name(["sm90", "sm100"]), weight=0.3)
entry("fuzz.random_case", random_case, Param(st.integers(0, 99).map(np.random.default_rng),
                                             st.sampled_from([None, 5, "x", np.random.RandomState(0)])),
      Name(["sm90", "sm100"]))
entry("oracle", oracle, Int([0x400], lo=0, hi=1 << 18), Int([16, 128], lo=0, hi=1 << 18), Int([256], lo=0, hi=1 << 18),
      Int([0, 1], lo=-7, hi=7), Int([16, 128], lo=16, hi=128, bad=[48]), Int([16, 8], lo=1, hi=32, bad=[3]),
      Flag(), Int([8, 16], lo=1, hi=4096), Int([16], lo=1, hi=4096), weight=0.3)


# ---- main's additions: operand specs, whole tiles, TMA placements, sparse wgmma, whole kernels, serve ----

def _tile_written(desc, rows, k):
    return tcemu.operand_addresses(desc, rows=rows, k=k, dtype="bf16")


TILE_DESC = tcemu.GmmaDescriptor(0x400, 16, 1024, 0, "128B")
TILE = Arr(st.just(_tile_written(TILE_DESC, 64, 64)),  # 64 x 64 bf16: four K blocks of 16, 32 bytes apart
           [np.zeros((64, 0), np.int64), np.full((64, 64), -1), np.full((8, 8), 1 << 50), np.zeros(64, np.int64)])
entry("check_tile", check.check_tile, TILE,
      Param(st.sampled_from([TILE_DESC, TILE_DESC.encode(), hex(TILE_DESC.encode()),
                             check.k_block_descriptors(TILE_DESC, 4, 32)]),
            st.sampled_from(BAD_DESC + [[], [TILE_DESC] * 100, [1.5] * 4, {}, (TILE_DESC, "x")])),
      dtype=Name(["bf16"]), major=Const("K"), arch=Const("sm90"),
      k=Opt(Int([16, 32], lo=1, hi=64, bad=[0, 5, -16])), start_advance=Opt(Int([32, 0, 64], lo=-(1 << 18),
                                                                                    hi=1 << 18)),
      max_lines=Int([3], lo=0, hi=1 << 16, bad=[2.5]), operand=Param(st.just("A"), st.sampled_from([None, 1,
                                                                                                   "x" * 100])))
entry("k_block_descriptors", check.k_block_descriptors, DESC90, Int([1, 4], lo=1, hi=4096, bad=[0]),
      Int([32, 0, -32], lo=-(1 << 18), hi=1 << 18), arch=Const("sm90"))
IDESC_A = InstrDescriptor("f16", "bf16", "bf16", m=128, n=64)  # A: 128 x 16 bf16, K-major
entry("check_operand(instr)", check.check_operand,
      Arr(st.just(tcemu.operand_addresses(D100[0], rows=128, k=16, dtype="bf16", arch="sm100")),
          [np.zeros((128, 15), np.int64), np.full((128, 16), -1)]),
      DESC100, instr=Param(st.sampled_from([IDESC_A, IDESC_A.encode()]), IDESC.bad),
      kind=Opt(Name(["f16"], bad=["i8", "tf32"])), operand=Name(["A", "a"], bad=["C"]),
      cta_group=Opt(Int([1], lo=1, hi=2, bad=[0, 3])), padded=Opt(Flag()))
entry("operand_spec", operand_spec, IDESC, kind=Opt(Name(list(tcemu.instr.KINDS))),
      operand=Name(["A", "B", "a", "b"], bad=["C", "AB"]), cta_group=Opt(Int([1, 2], lo=1, hi=2, bad=[0, 3])))
entry("instruction_k(sparse)", instruction_k, DTYPE90, ARCH, Flag(), Name(["A", "B", "a"], bad=["C"]),
      padded=Opt(Flag()))

G_TMA = np.arange(128 * 128, dtype=np.uint16).reshape(128, 128)
BOX = tcemu.tma_load(SharedMemory(), 0x400, G_TMA, box=[64, 32], coords=[0, 0], swizzle="128B")  # (32, 64)
_SM = SharedMemory()
BOXES = [(tcemu.tma_load(_SM, 0x400, G_TMA, box=[64, 32], coords=[0, 64], swizzle="128B"), [0, 64]),
         (tcemu.tma_load(_SM, 0x1400, G_TMA, box=[64, 32], coords=[64, 64], swizzle="128B"), [64, 64])]
entry("tma_placement", tma.tma_placement,
      Param(st.sampled_from([BOX, BOXES, [(BOX, [0, 0])]]),
            st.sampled_from(["x", None, 7, [], [(BOX, [0])], [(BOX.astype(np.float64), [0, 0])],
                             [(BOX, [0.5, 0])], [(BOX, [HUGE, 0])], [(BOX, [0, 0]), (BOX, [0, 0])],
                             [(BOX, [0, 0]), (BOX[None], [0, 0, 0])], np.zeros((0, 4), np.int64), [BOX],
                             [(BOX, [0, 0], 1)], [(np.array(["a"]), [0])], BOX.astype(object)])),
      rows=Param(st.sampled_from([1, (1,), [1]]), st.sampled_from([5, -1, "x", 1.5, None, (), True, HUGE, 0])),
      k=Param(st.sampled_from([0, (0,)]), st.sampled_from([5, -1, "x", 1.5, None, (), True, HUGE, 1])),
      element_strides=Opt(Param(st.sampled_from([[1, 1], (1, 1)]), st.sampled_from([[0, 1], [1, 9], "x", [1.5, 1],
                                                                                     [1], [True, 1], 3]))))

SP_META = sparse.meta_registers(np.full((64, 8), 0x4, np.uint8), "bf16")  # every chunk keeps elements 0 and 1
entry("wgmma_sp", lambda smem, da, db, **kw: sparse.wgmma_sp(smem, da, db, **kw),
      Param(st.just(FULL90), st.sampled_from([FULL100, np.zeros(16, np.float32), "smem", None])), DESC90, DESC90,
      shape=Name(["m64n8k32", "m64n16k32"], bad=["m64n8k16", "m64n7k32", "m128n8k32"]),
      dtype_a=Const("bf16"), dtype_b=Const("bf16"), dtype_d=Const("f32"),
      sparse_meta=Arr(st.just(SP_META), [np.zeros(127, np.uint32), np.full(128, -1), np.full(128, 1 << 32),
                                         np.zeros((2, 128), np.uint32)]),
      sparsity_selector=Int([0, 1], lo=0, hi=1, bad=[2, 3]), trans_a=Flag(), trans_b=Flag(), scale_d=Flag(),
      scale_a=Int([1, -1], lo=-1, hi=1, bad=[0]), scale_b=Int([1, -1], lo=-1, hi=1, bad=[2]),
      satfinite=Param(st.just(False), st.sampled_from(["False", 0, None, True])),
      c=Opt(Arr(st.just(np.zeros((64, 8), np.float32)), [np.zeros((64, 8), np.float16)], as_float=False)),
      a_regs=A_REGS, invalid_meta=Name(["raise", "gather"]), rule=Name(["selected", "signed", "zeros"]),
      weight=1.5)
NIBBLES = Arr(st.sampled_from([0x4, 0x9, 0xE]).map(lambda v: np.full((64, 8), v, np.uint8)),
              [np.full((64, 8), 16), np.full((64, 8), -1), np.zeros((64, 7), np.uint8), np.zeros((63, 8))])
entry("sparse.meta_registers", sparse.meta_registers, NIBBLES, Name(["bf16", "f16"], bad=["tf32x"]),
      Int([0, 1], lo=0, hi=1, bad=[2]), fill=Int([0, 0xFFFFFFFF], lo=0, hi=(1 << 32) - 1))
entry("sparse.meta_nibbles", sparse.meta_nibbles,
      Arr(st.just(SP_META), [np.zeros(127, np.uint32), np.full(128, -1), np.full(128, 1 << 32)]),
      Name(["bf16", "e4m3", "tf32"], bad=["b1"]), Int([0], lo=0, hi=1, bad=[2]))
entry("sparse.sparsify", sparse.sparsify,
      Arr(st.just(np.tile(np.array([0x3F80, 0, 0x4000, 0], np.uint16), (64, 8))),
          [np.ones((64, 32), np.uint16), np.zeros((64, 31), np.uint16), np.zeros((64, 32, 1), np.uint16)],
          as_float=True),
      Name(["bf16", "f16"], bad=["b1", "f32"]))
entry("sparse.densify", sparse.densify,
      Arr(st.just(np.ones((64, 16), np.uint16)), [np.ones((64, 15), np.uint16), np.full((64, 16), -1)]),
      NIBBLES, Name(["bf16"], bad=["b1"]))
entry("sparse.sparse_dot", lambda a, b, nib, c, **kw: sparse.sparse_dot(a, b, nib, c, **kw),
      Arr(st.just(RNG.integers(0, 1 << 16, (64, 16)).astype(np.uint16)), [np.zeros((64, 15), np.uint16),
                                                                         np.full((64, 16), 1 << 16)]),
      Arr(st.just(RNG.integers(0, 1 << 16, (8, 32)).astype(np.uint16)), [np.zeros((8, 31), np.uint16),
                                                                        np.zeros(32, np.uint16)]),
      NIBBLES, Opt(Arr(st.just(np.zeros((64, 8), np.uint32)), [np.zeros((64, 7), np.uint32)])),
      dtype_a=Const("bf16"), dtype_b=Const("bf16"), dtype_d=Name(["f32"], bad=["f16x", "bf16"]),
      scale_a=Int([1, -1], lo=-1, hi=1, bad=[0]), satfinite=Param(st.just(False), st.sampled_from(["False", 1])),
      rule=Name(["selected", "signed", "zeros", "halves"]))
entry("describe_sparse_meta", explain.describe_sparse_meta,
      Arr(st.just(SP_META), [np.zeros(127, np.uint32), np.full(128, -1)]), Name(["bf16", "tf32"], bad=["b1"]),
      Int([0, 1], lo=0, hi=1, bad=[3]))

# kernel inputs and tensor maps of whole-kernel runs
entry("kernel_inputs.input_bits", kernel_inputs.input_bits, Name(["bf16", "f16", "f32", "e4m3"], bad=["e5m2"]),
      Param(st.sampled_from([(4,), (3, 5), [2, 2], (1, 1, 1, 1)]),
            st.sampled_from([(-1,), (0.5,), "x", None, (1 << 40,), (1 << 20, 1 << 20), (HUGE,), [[2]]])),
      Int([0, 7, (1 << 64) - 1], lo=0, hi=(1 << 64) - 1), Int([0, 1], lo=0, hi=(1 << 64) - 1))
TM_TENSOR = Arr(st.sampled_from([(64, 64), (4, 32, 64)]).map(lambda s: np.zeros(s, np.uint16)),
                [np.zeros((2,) * 6, np.uint16), np.zeros((8, 8), object), np.zeros((64, 64), np.uint16)[:, ::2],
                 np.zeros((8, 8), "U2")], as_float=False, as_object=False)
entry("ptx.tensormap.encode_tiled", tensormap.encode_tiled, TM_TENSOR,
      Param(st.sampled_from([[64, 8], [64, 4, 2], [8, 8]]), st.sampled_from([[0, 8], [300, 8], [8.0, 8], "x", None,
                                                                            [HUGE, 8], [8], [8] * 6, [7, 8]])),
      dtype=Opt(Name(["UINT16", "BFLOAT16", "FLOAT16", "CU_TENSOR_MAP_DATA_TYPE_UINT16"], bad=["FLOAT32"])),
      element_strides=Opt(Param(st.sampled_from([[1, 1], [1, 2, 1]]), st.sampled_from([[0, 1], [1, 9], 1, "x",
                                                                                       [1.5, 1]]))),
      swizzle=Name(["none", "32B", "64B", "128B", "128B_ATOM_32B"], bad=["16B"]),
      interleave=Name(["none"], bad=["32B"]), l2_promotion=Name(["none", "128B"], bad=["512B"]),
      oob_fill=Name(["none"], bad=["zero"]))

# tcemu.ptx: a small hand-written kernel (thread t stores t into out[t] when t < n)
TID_PTX = """.version 8.5
.target sm_90a
.address_size 64
.visible .entry store_tid(.param .u64 out, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd0, [out];
  ld.param.u32 %r0, [n];
  cvta.to.global.u64 %rd0, %rd0;
  mov.u32 %r1, %tid.x;
  setp.ge.u32 %p0, %r1, %r0;
  @%p0 bra DONE;
  mul.wide.u32 %rd1, %r1, 4;
  add.s64 %rd1, %rd0, %rd1;
  st.global.u32 [%rd1], %r1;
DONE:
  ret;
}
"""
PTX_BAD = ["", "garbage", 7, None, b"\xff\xfe", "missing.ptx", "a" * 10_000, TID_PTX.replace("ret;", "ret"),
           TID_PTX.replace("64\n", "32\n", 1), TID_PTX[:len(TID_PTX) // 2], TID_PTX[:-40], "(" * 5000,
           TID_PTX.replace("st.global.u32", "st.global.u99"), "{" * 3000 + "}" * 3000, [TID_PTX]]


def _load_and_compile(source):
    """tcemu.ptx.load, then every kernel compiled (load parses; unsupported instructions are refused when a
    kernel is first compiled)."""
    module = tptx.load(source)
    return [module.program(name) for name in module.kernels]


PTX_TOKENS = list(" \n;,{}[]()<>.%@!+-:0123456789abcdefxyz_$|") + [
    ".reg", ".b32", "%r1", "%rd1", "[%rd1]", "ld.global.u32", "bra", "@%p0", ".entry", ".func", "ret;", "0x", "0f",
    ".x4", ".shared", ".sync", ".aligned", "::", ".v4", "{%r1, %r2}", "08", "1e3", "%p1"]
PTX_SOURCES = [TID_PTX] + [open(os.path.join(HERE, "fixtures", "ptx", n + ".ptx")).read()
                           for n in ("calls", "warp_kernels", "matmul_tma_bf16")]


@st.composite
def mutated_ptx(draw):
    """A bundled PTX text with a few characters or tokens deleted, inserted or cut off: it may still compile,
    or must be refused with a PtxError naming the line and column (the parser and every instruction compiler)."""
    text = draw(st.sampled_from(PTX_SOURCES))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        how = draw(st.sampled_from(["delete", "insert", "insert", "cut"]))
        if how == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 12)):]
        elif how == "insert":
            text = text[:i] + draw(st.sampled_from(PTX_TOKENS)) + text[i:]
        else:
            text = text[:i]
    return text


entry("ptx.load", _load_and_compile, Param(st.sampled_from([TID_PTX, TID_PTX.encode()]), st.sampled_from(PTX_BAD),
                                           mutated_ptx()))
TID_MODULE = tptx.load(TID_PTX)


def _launch(name, grid, block, args, **kw):
    args = args() if callable(args) else args  # a fresh output array per call
    return TID_MODULE.launch(name, grid=grid, block=block, args=args, printf="collect", **kw)


entry("ptx.Module.launch", _launch, Name(["store_tid"], bad=["store", "DONE"]),
      Param(st.sampled_from([1, (1,), (2, 1, 1), np.int64(1)]),
            st.sampled_from([0, -1, (1, 1, 1, 1), "x", 1.5, HUGE, None, (True,), (1 << 40,), ()])),
      Param(st.sampled_from([32, (64,), (128, 1, 1)]),
            st.sampled_from([0, 2048, (33, 33), "x", -32, HUGE, None, (1.5,)])),
      Param(st.sampled_from([lambda: [np.zeros(128, np.uint32), 100], lambda: {"out": np.zeros(128, np.uint32),
                                                                                  "n": 128}]),
            st.sampled_from([[], "x", None, [np.zeros(4, np.uint32), 100], [np.zeros(128, np.uint32), -1],
                             [np.zeros(128, np.uint32), 1.5], [np.zeros(128, np.uint32), 1 << 32],
                             [np.zeros(128, object), 1], [np.zeros(128, np.uint32), 1, 2], {"out": None},
                             [0, 100], [np.zeros(128, np.uint32), HUGE], [np.zeros(128, np.uint32), "5"]])),
      shared_bytes=Int([0, 1024], lo=0, hi=227 * 1024), zero_init_shared=Flag(), check_layouts=Flag(),
      max_instructions=Opt(Int([10 ** 6], lo=1, bad=[0])),
      ctas=Opt(Param(st.just([(0, 0, 0)]), st.sampled_from([[(5, 0, 0)], [(-1,)], "x", [1.5], [(0, 0, 0, 0)], 3]))),
      trace=Opt(Param(st.just(lambda w, pc, m, c: None), st.sampled_from([5, "x", True]))), weight=1.5)

# tcemu.triton: a tiny @triton.jit kernel (compiled once; later compiles hit Triton's cache)
try:
    import triton as _triton_pkg
    import triton.language as tl

    @_triton_pkg.jit
    def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < n
        tl.store(y_ptr + i, tl.load(x_ptr + i, mask=m) + 1, mask=m)
except ImportError:  # Triton is optional: without it run/compile raise TritonError (also a clean error)
    add_one = None


def _add_one_meta():
    sig, consts, div = ttriton.specialize(add_one, {"x_ptr": "*i32", "y_ptr": "*i32", "n": 128, "BLOCK": 128})
    ptx, _, meta = ttriton.compile_kernel(add_one, signature=sig, constexprs=consts, num_warps=4, num_stages=1,
                                          divisibility=div)
    return tptx.load(ptx), meta


TRITON_COMPILED = _add_one_meta() if add_one is not None else (TID_MODULE, {})
VALUES = Param(st.sampled_from([lambda: {"x_ptr": np.arange(128, dtype=np.int32), "y_ptr": np.zeros(128, np.int32),
                                          "n": 128},
                                lambda: {"x_ptr": np.arange(256, dtype=np.int32), "y_ptr": np.zeros(256, np.int32),
                                         "n": 256}]),
               st.sampled_from([None, "x", [], {}, {"x_ptr": np.zeros(128, np.int32), "n": 128},
                                {"x_ptr": "a", "y_ptr": np.zeros(128, np.int32), "n": 128},
                                {"x_ptr": np.zeros(128, np.int32), "y_ptr": np.zeros(128, np.int32), "n": 100},
                                {"x_ptr": np.zeros(128, np.int32), "y_ptr": np.zeros(128, np.int32), "n": "128"},
                                {"x_ptr": np.zeros(128, np.int32), "y_ptr": np.zeros(128, np.int32), "n": HUGE},
                                {"x_ptr": np.zeros(128, np.int32), "y_ptr": np.zeros(128, np.int32), "n": 128,
                                 "BLOCK": 64}]))


def _run_compiled(ptx, meta, values, grid):
    values = values() if callable(values) else values
    return ttriton.run_compiled(ptx, meta, values, grid=grid, printf="collect")


entry("triton.run_compiled", _run_compiled,
      Param(st.sampled_from([TRITON_COMPILED[0]]), st.sampled_from([None, 7, "garbage", PTX_BAD[-1]])),
      Param(st.just(TRITON_COMPILED[1]), st.sampled_from([None, {}, "x", [], {"entry": "add_one"},
                                                          dict(TRITON_COMPILED[1], params="x"),
                                                          dict(TRITON_COMPILED[1], block=[0, 1, 1]),
                                                          dict(TRITON_COMPILED[1], shared_bytes=-1),
                                                          dict(TRITON_COMPILED[1], entry=HUGE)])),
      VALUES, Param(st.sampled_from([(1,), (2,), [1, 1, 1], (2, 1)]),
                    st.sampled_from([(0,), "x", (1, 1, 1, 1), (HUGE,), (1.5,), (-1,)])), weight=0.7)


def _triton_run(fn, grid, values, **kw):
    values = values() if callable(values) else values
    if not isinstance(values, dict):
        return ttriton.run(fn, grid, launch={"printf": "collect"}, **kw)
    return ttriton.run(fn, grid, BLOCK=128, launch={"printf": "collect"}, **values, **kw)


RUN_VALUES = Param(VALUES.valid, st.sampled_from([None, "x", [], {}, {"x_ptr": np.zeros(128, np.int32), "n": 128},
                                                   {"x_ptr": "a", "y_ptr": np.zeros(128, np.int32), "n": 128},
                                                   {"x_ptr": np.zeros(128, np.int32), "y_ptr": np.zeros(128, np.int32),
                                                    "n": "128"},
                                                   {"x_ptr": np.zeros(128, np.int32), "y_ptr": np.zeros(128, object),
                                                    "n": 128},
                                                   {"x_ptr": np.zeros(128, np.int32), "y_ptr": np.zeros(128, np.int32),
                                                    "n": HUGE}]))
entry("triton.run", _triton_run, Param(st.just(add_one), st.sampled_from([None, 7, "x", print, lambda x: x])),
      Param(st.sampled_from([(1,), 1, (2,)]), st.sampled_from([(0,), "x", (1, 1, 1, 1), (HUGE,), (1.5,), None])),
      RUN_VALUES, num_warps=Int([4, 2], lo=1, hi=32, bad=[3, 0, 64]), num_stages=Int([1, 3], lo=1, hi=8, bad=[0]),
      arch=Name(["sm90"], bad=["sm80"]), weight=0.5)
entry("triton.TensorDescriptor", ttriton.TensorDescriptor,
      Arr(st.sampled_from([(64, 64), (16, 32, 64)]).map(lambda s: np.zeros(s, np.uint16)),
          [np.zeros((64, 64), np.uint16)[:, ::2], np.zeros(()), np.zeros((64, 64), object)], as_float=False,
          as_object=False),
      Param(st.just(None).map(lambda _: [64, 64]), st.sampled_from([[64.5, 64], "x", None, [0, 64], [-1, 64],
                                                                     [HUGE, 64], [64] * 6, [[64]], [True, 8]])))

# tcemu serve: the JSON API's views (request fields as a query string or JSON body gives them)
SERVE_BAD = ["-8", "0x", "x", "9" * 5000, "1e3", [], {}, 1.5, "a" * 300, "\x00", HUGE, float("nan")]  # null: unset


def Request(valid, reads=()):
    """A request of a serve view: `valid` requests; bad: one of them with one of the fields it sets (or of
    `reads`, fields every one of these requests reads) made hostile, an unknown field, or no mapping at all."""
    pairs = [(r, sorted(set(r) | set(reads))) for r in valid]
    hostile = st.sampled_from(pairs).flatmap(lambda rf: st.tuples(
        st.just(rf[0]), st.sampled_from(rf[1]), st.sampled_from(SERVE_BAD))).map(lambda t: dict(t[0], **{t[1]: t[2]}))
    junk = st.sampled_from([None, [], "x", 7, {"nonsense": "1"}, {1: 2}, {"x" * 300: "1"}])
    return Param(st.sampled_from(valid), hostile | junk)


entry("serve.descriptor_view", serve_api.descriptor_view,
      Request([{"descriptor": hex(D90[0].encode())}, {"descriptor": hex(D90[1].encode()), "rows": "16", "k": "32"},
               {"input": "fields", "start_address": "0x400", "lbo": "16", "sbo": "0x400", "swizzle": "128B"},
               {"arch": "sm100", "descriptor": hex(D100[0].encode()), "instr": "0x8400490", "kind": "f16"},
               {"descriptor": hex(D90[0].encode()), "sparse": "1", "operand": "b"}], ["arch", "sparse"]))
entry("serve.swizzle_view", serve_api.swizzle_view,
      Request([{"mode": "128B"}, {"mode": "32B", "base_offset": "1"}, {"mode": "128B_base32B"}], ["base_offset"]))
entry("serve.tma_view", serve_api.tma_view,
      Request([{"dims": "64x64", "box": "64x64", "swizzle": "128B", "smem_addr": "0x400", "k": "16"},
               {"dims": "64x40", "box": "64x64", "coords": "0,8", "swizzle": "128B", "major": "MN"},
               {"dims": "24x16", "box": "24x16", "swizzle": "none", "k": "24"}],
              ["coords", "smem_addr", "element_strides", "dtype", "arch"]))
entry("serve.instr_view", serve_api.instr_view,
      Request([{"instr": "0x8400490", "kind": "f16"}, {"instr": "0x8400490", "kind": "f16", "cta_group": "1"}],
              ["cta_group"]))
entry("serve.tmem_view", serve_api.tmem_view,
      Request([{"instr": "0x8400490", "kind": "f16", "d_tmem": hex(16 << 16 | 8), "a_tmem": "0x100"},
               {"instr": "0x8400490", "kind": "f16"}], ["d_tmem", "cta_group"]))
entry("serve.banks_view", serve_api.banks_view,
      Request([{"op": "ldmatrix.x4", "pattern": "(t % 8) * 128 + (t // 8) * 16"},
               {"op": "st.shared.b32", "source": "addresses", "addresses": ", ".join(hex(4 * t) for t in range(32))}],
              ["mask"]))
entry("serve.ptx_view", serve_api_ptx.ptx_view,
      Request([{"ptx": TID_PTX, "block": "64", "args": "zeros:u32:64 64"},
               {"ptx": TID_PTX, "block": "32", "args": "zeros:u32:32 32", "limit": "7"}],
              ["grid", "warp", "cta", "limit", "kernel", "shared"]), weight=0.7)

# ---- main's second round: tcemu.matmul, launch records, the zero-sign replay, tcgen05 .sp / .ws / sm_103a, the
# zero-column mask, device printf and instruction traces ----

from tcemu.traces import launches
from tcemu.traces.kinds import zero_sign  # noqa: E402
from tcemu.blackwell.collector import CollectorBuffers  # noqa: E402
from tcemu.blackwell.instr import ZeroColumnMask  # noqa: E402

MM_A = RNG.integers(0, 1 << 16, (16, 32)).astype(np.uint16) & 0x7F7F   # bf16 bits: finite values
MM_B = RNG.integers(0, 1 << 16, (32, 8)).astype(np.uint16) & 0x7F7F
entry("matmul", lambda a, b, **kw: tcemu.matmul(a, b, dtype_b="bf16", **kw),
      Arr(st.just(MM_A), [MM_A[:, :31], MM_A.astype(np.int64) + (1 << 16), MM_A[None], MM_A[:0], np.zeros((16, 32),
                                                                                                    np.float16)]),
      Arr(st.just(MM_B), [MM_B[:31], MM_B.astype(np.int64) - (1 << 20), MM_B.ravel(), np.zeros((32, 8), np.float32)]),
      dtype_a=Name(["bf16"], bad=["e4m3", "tf32"]), arch=Name(["sm90", "sm100"]), dtype_d=Name(["f32"], bad=["f16"]),
      out_dtype=Opt(Name(["f32", "bf16", "f16"], bad=["e4m3", "s32"])),
      c=Opt(Arr(st.just(np.zeros((16, 8), np.float32)), [np.zeros((16, 9), np.float32), np.zeros((16, 8), np.float16)],
                as_float=False)),
      k_step=Opt(Int([16, 32, 7], lo=1, bad=[0, -16])), promote_every=Opt(Int([1, 2], lo=1, bad=[0, -1])),
      split_k=Int([1, 2], lo=1, bad=[0, -1]), workers=Opt(Int([1, 2], lo=1, bad=[0, -2])),
      init=Name(["zero", "none"]), engine=Name(["fast", "reference"]),
      alpha=Opt(Param(st.sampled_from([1.0, 0.9375, 2, np.float32(0.5)]),
                      st.sampled_from([NAN, INF, "1", True, 0.1, [1.0], 1j, HUGE, np.array([1.0])]))),
      satfinite=Param(st.just(False), st.sampled_from(["False", 0, None, 1])),
      progress=Param(st.sampled_from([False, lambda done, total: None]), st.sampled_from(["yes", 1, [], 5.0])),
      tile=Param(st.none(), st.sampled_from([(64, 64), "x", 7])), weight=1.5)
FP8_A = RNG.integers(0, 0x78, (8, 256)).astype(np.uint8)   # e4m3 finite bits
FP8_B = RNG.integers(0, 0x78, (256, 8)).astype(np.uint8)
SCALE_A, SCALE_B = np.float32(RNG.random((8, 2)) + 0.5), np.float32(RNG.random((1, 2)) + 0.5)
entry("matmul(BlockScales)", lambda sa, sb, a_block, b_block, block_k, promote: tcemu.matmul(
    FP8_A, FP8_B, dtype_a="e4m3", dtype_b="e4m3", promote_every=promote,
    scales=tcemu.BlockScales(sa, sb, a_block, b_block, block_k)),
      Arr(st.just(SCALE_A), [SCALE_A[:, :1], SCALE_A.astype(np.float64), np.zeros((8, 2), np.int32)],
          as_float=False),  # a NaN / inf scale is data: the promotion FFMA multiplies it (NaN / inf out)
      Arr(st.just(SCALE_B), [SCALE_B[:, :1], np.zeros((2, 2), np.float32)],
          as_float=False),
      Int([1], lo=1, bad=[0, 3]), Int([128], lo=1, bad=[0, 7]), Int([128], lo=1, bad=[0, 100]),
      Int([4], lo=1, bad=[0, 3]))
MX_SCALES = (RNG.integers(120, 130, (16, 1)), RNG.integers(120, 130, (8, 1)))
entry("matmul(sm100 mx scales)", lambda a, b, scales, **kw: tcemu.matmul(a, b, dtype_a="e4m3", dtype_b="e4m3",
                                                                        arch="sm100", scales=scales, **kw),
      Param(st.just(FP8_A[:, :32].repeat(2, 0)), st.sampled_from([FP8_A, "x"])),
      Param(st.just(FP8_B[:32]), st.sampled_from([FP8_B[:31], None])),
      Param(st.just(MX_SCALES), st.sampled_from([MX_SCALES[0], (MX_SCALES[0], MX_SCALES[0]),
                                                 (MX_SCALES[0] + 200, MX_SCALES[1]), (MX_SCALES[0].astype(float),
                                                                                      MX_SCALES[1]), "x", ()])),
      kind=Opt(Name(["mxf8f6f4"], bad=["f16", "mxf4"])), out_dtype=Opt(Name(["f32", "bf16"])))  # None: from dtype

# launch records (tcemu.launches): the pingpong CUTLASS kernel, 200 x 136 x 200 (one output tile per CTA)
PP_JSON = json.load(open(os.path.join(HERE, "fixtures", "ptx", "cutlass_pingpong_bf16.json")))
PP_RECORD = next(r for r in PP_JSON["launches"] if r["case"][0] == 200)
PP_MODULE = tptx.load(os.path.join(HERE, "fixtures", "ptx", "cutlass_pingpong_bf16.ptx"))


def _record(**changes):
    return dict(PP_RECORD, **changes)


def _buffers(**changes):
    return [dict(b, **changes) for b in PP_RECORD["buffers"]]


BAD_RECORDS = [None, "x", [], {}, _record(grid=[1 << 20, 1 << 20, 1]), _record(grid="x"), _record(block=[4096, 1, 1]),
               _record(param_blob="zz"), _record(param_blob=PP_RECORD["param_blob"][:-2]), _record(param_blob=7),
               _record(buffers=_buffers(storage=["200", 136])), _record(buffers=_buffers(storage=[1 << 30, 1 << 30])),
               _record(buffers=_buffers(dtype="e9m9")), _record(buffers=_buffers(role="eval")),
               _record(buffers=_buffers(address=-256)), _record(buffers=_buffers(address=1.5)),
               _record(buffers=_buffers(address=1 << 70)), _record(buffers=_buffers(bytes=HUGE)),
               _record(buffers="x"), _record(buffers=PP_RECORD["buffers"] * 2),
               _record(encodes=[dict(e, dims=["x"] * e["rank"]) for e in PP_RECORD["encodes"]]),
               _record(encodes=[dict(e, rank=9) for e in PP_RECORD["encodes"]]),
               _record(encodes=[dict(e, dtype=99) for e in PP_RECORD["encodes"]]),
               _record(encodes=[dict(e, box=[1 << 20] * e["rank"]) for e in PP_RECORD["encodes"]]),
               _record(tensormaps=[dict(t, offset=3) for t in PP_RECORD["tensormaps"]]),
               _record(tensormaps=[dict(t, encode=99) for t in PP_RECORD["tensormaps"]]),
               _record(pointers=[{"offset": 0, "buffer": "nope", "delta": 0}]),
               _record(pointers=[{"offset": "0", "buffer": "A", "delta": 0}]),
               _record(params=[dict(p, offset=p["offset"] + 8) for p in PP_RECORD["params"]]),
               _record(params="x"), _record(entry="_Z6nosuch"), _record(entry=None), _record(cluster=[0, 1, 1]),
               _record(shared_bytes=-1), _record(shared_bytes=1 << 40),
               {k: v for k, v in PP_RECORD.items() if k != "encodes"}]
entry("launches.replay", lambda rec, ptx, **kw: launches.replay(rec, ptx, **kw),
      Param(st.just(PP_RECORD), st.sampled_from(BAD_RECORDS)),
      Param(st.just(PP_MODULE), st.sampled_from(["garbage", 7, None, TID_MODULE, b"\xff", [PP_MODULE]])),
      seed=Int([0, 7, (1 << 64) - 1], lo=0, hi=(1 << 64) - 1),
      inputs=Opt(Param(st.just(None).map(lambda _: {"A": RNG.integers(0, 1 << 16, (200, 200)).astype(np.uint16)}),
                       st.sampled_from([{"Z": np.zeros(4)}, {"A": np.zeros((200, 199), np.uint16)}, "x", [],
                                        {"A": np.zeros((200, 200), object)}, {"A": "x"}, {"D": np.zeros((200, 136),
                                                                                               np.float32)},
                                        {7: np.zeros(4)}]))),
      cluster=Opt(Param(st.sampled_from([(1, 1, 1), [1, 1, 1]]),
                        st.sampled_from([(0, 1, 1), "x", (1.5, 1, 1), (HUGE, 1, 1), (64, 1, 1)]))),  # (1, 1): a dim3
      check=lambda r: np.asarray(r.outputs["D"]).shape == (200, 136) or pytest.fail("wrong output shape"),
      weight=0.5)
_LAUNCH_TRACE = []


def _launch_trace():
    """The campaign's cut launch_outputs trace (one pingpong case), loaded once."""
    if not _LAUNCH_TRACE:
        _LAUNCH_TRACE.append(traces.load_trace(os.path.join(_trace_dir()[0], "launch.npz")))
    return _LAUNCH_TRACE[0]


def _trace_case(trace, i, modules):
    t = _launch_trace() if trace == "launch" else trace() if callable(trace) else trace
    return launches.replay_trace_case(t, i, {"cutlass_pingpong_bf16": PP_MODULE} if modules == "cached" else modules)


def _hand_trace(**meta_changes):
    """A Trace built by hand from the cut one, its meta changed (made when drawn: the files exist by then)."""
    return lambda: traces.Trace(_launch_trace().path, dict(_launch_trace().meta, **meta_changes),
                                _launch_trace().columns)


entry("launches.replay_trace_case", _trace_case,
      Param(st.just("launch"), st.sampled_from([None, "x", {}, 7, _hand_trace(cases="x"), _hand_trace(kind="ptx_alu"),
                                                _hand_trace(cases=[{"fixture": "x"}]), _hand_trace(fixtures={}),
                                                lambda: traces.load_trace(os.path.join(_trace_dir()[0], "zs.npz"))])),
      Int([0], lo=0, hi=0, bad=[1, -1]),
      Param(st.sampled_from([None, "cached", {}]), st.sampled_from(["x", [], 5, {"cutlass_pingpong_bf16": "module"},
                                                                    {"cutlass_pingpong_bf16": TID_MODULE}])),
      weight=0.5)

# the zero-sign replay (tcemu.traces.kinds.zero_sign): the campaign's cut trace (three cases tcemu's model gives)
_ZS = []


def _zs():
    if not _ZS:
        t = traces.load_trace(os.path.join(_trace_dir()[0], "zs.npz"))
        _ZS.append((t.meta, t.columns))
    return _ZS[0]


def _zs_meta(**changes):
    return lambda: dict(_zs()[0], **changes)


def _zs_cols(**changes):
    return lambda: dict(_zs()[1], **changes)


def _replay_zero_sign(meta, cols, hypotheses):
    meta = _zs()[0] if meta == "zs" else meta() if callable(meta) else meta
    cols = _zs()[1] if cols == "zs" else cols() if callable(cols) else cols
    return zero_sign.replay_zero_sign(meta, cols, hypotheses)


entry("zero_sign.replay_zero_sign", _replay_zero_sign,
      Param(st.just("zs"), st.sampled_from([None, "x", [], {}, _zs_meta(kinds=[["s8", "s8", "s32"]] * 5),
                                            _zs_meta(kinds="x"), _zs_meta(instantiations=[[0, 9, 8, 1, 1]] * 20),
                                            _zs_meta(instantiations=[[0, 0, 7, 1, 1]] * 20),
                                            _zs_meta(groups=None), _zs_meta(kind="ptx_alu"),
                                            _zs_meta(kinds=[["f16", "f16", "f16"]] * 5)])),
      Param(st.just("zs"), st.sampled_from([None, "x", [], {}, _zs_cols(pool=None), _zs_cols(pool=[1, 2, 3]),
                                            _zs_cols(a_len=np.full(3, 1 << 30, np.int32)),
                                            _zs_cols(a_off=np.full(3, -5, np.int32)),
                                            _zs_cols(d_offsets=np.zeros(4, np.int64)),
                                            _zs_cols(inst=np.full(3, 999, np.int16)),
                                            _zs_cols(inst=np.zeros(3, np.float64)),
                                            _zs_cols(sp_meta=np.full(3, -1, np.int64)),
                                            _zs_cols(group=np.zeros(2, np.int16)),
                                            _zs_cols(pool=np.full(9628, 0xFFFFFFFF, np.uint32))])),
      Param(st.sampled_from([(), zero_sign.HYPOTHESES, ("model",), ["signed_zero", "zeros"]]),
            st.sampled_from(["model", ["nonsense"], None, 5, [None], ("model", 7), {"model": 1}])),
      reports=lambda r: not r.ok)   # a pool of NaN bits is a legal trace that does not replay

# tcgen05.mma.sp / .ws / sm_103a (keyword-only arguments of tcgen05_mma), ZeroColumnMask, CollectorBuffers
SP_F16 = InstrDescriptor("f16", "f16", "f16", m=128, n=64, sparse=True)
SP_F8 = InstrDescriptor("f8f6f4", "e4m3", "e4m3", m=128, n=64, sparse=True)


def _nibbles(kind):
    from tcemu.blackwell.sparse import CHUNK, VALID_NIBBLES
    chunks = 2 * tcemu.blackwell.mma.K_OF_KIND[kind] // CHUNK[kind]
    return st.just(None).map(lambda _: RNG.choice(VALID_NIBBLES[CHUNK[kind]], (128, chunks)).astype(np.uint8))


entry("tcgen05_mma(sparse)", lambda idesc, meta, da, db, **kw: tcemu.tcgen05_mma(FULL100, da, db, idesc,
                                                                                 sparse_meta=meta, **kw),
      Param(st.sampled_from([SP_F16, SP_F8]), st.sampled_from([InstrDescriptor("f16", "f16", "f16", m=128, n=64)])),
      Arr(_nibbles("f16"), [np.full((128, 8), 16), np.full((128, 8), -1), np.zeros((128, 7), np.uint8),
                            np.zeros((64, 8), np.uint8), 0, 1 << 40, True, "x"], ok=(0,)),
      DESC100, DESC100, invalid_meta=Opt(Name(["gather"], bad=["zeros", "refuse"])),
      enable_input_d=Flag(), weight=1.5)
WS_F16 = InstrDescriptor("f16", "f16", "f32", m=64, n=64, max_shift=2)   # max shift 16 columns
ZCM = [None, 0, ZeroColumnMask(shift=8).encode(), ZeroColumnMask((1, 0, 0, 0), (1, 0, 0, 0), True, 3, 4, 2).encode(),
       ZeroColumnMask(shift=16), hex(ZeroColumnMask(non_zero_mask=True, skip_span=1).encode())]
entry("tcgen05_mma(ws)", lambda da, db, **kw: tcemu.tcgen05_mma(FULL100, da, db, WS_F16, **kw), DESC100, DESC100,
      ws=Param(st.just(True), st.sampled_from([False, 1, "True", None, np.array([True]), 2])),
      zero_column_mask=Param(st.sampled_from(ZCM), st.sampled_from(
          [-1, 1 << 64, "0xzz", 1.5, HUGE, ZeroColumnMask(shift=17).encode(), ZeroColumnMask(shift=40).encode(),
           1 << 36, [0], ZeroColumnMask(start_counts=(300, 0, 0, 0)), ZeroColumnMask(shift=-1),
           ZeroColumnMask(start_counts="abcd"), object()])),
      collector=Opt(Param(st.builds(CollectorBuffers), st.sampled_from(["x", 5, {}, []]))),
      collector_op=Opt(Name(["b0::fill", "b1::discard", ".collector::b2::fill", "b3::discard"],
                            bad=["a::fill", "b4::fill", "b0::keep", "b0::use", "b0", "::"])),
      enable_input_d=Flag(), weight=1.5)
K96 = InstrDescriptor("mxf4", "e2m1", "e2m1", m=128, n=64, scale_type="ue8m0", k96=True)   # 3 factors a row
K96_SA, K96_SB = RNG.integers(120, 130, (128, 3)), RNG.integers(120, 130, (64, 3))


def _lbo_mode_descs():
    from tcemu.testing.strategies import lbo_mode_descriptors
    return lbo_mode_descriptors().filter(lambda d: d.start_address + 128 * 48 < 200 * 1024 and d.lbo + 128 * 48 <
                                         200 * 1024)


entry("tcgen05_mma(sm103)", lambda da, db, sa, sb, **kw: tcemu.tcgen05_mma(FULL100, da, db, K96, scale_a=sa,
                                                                          scale_b=sb, **kw),
      Param(st.sampled_from(D100[:2]) | _lbo_mode_descs(), DESC100.bad), DESC100,
      Arr(st.just(K96_SA), [K96_SA[:, :2], np.full((128, 3), 256), K96_SA[:, :1].repeat(6, 1)]),
      Arr(st.just(K96_SB), [K96_SB[:1], np.full((64, 3), -1)]),
      arch=Name(["sm103"], bad=["sm100", "sm90"]), enable_input_d=Flag(), weight=1.2)
entry("ZeroColumnMask.decode/mask", lambda v, m, n: ZeroColumnMask.decode(v).mask(m, n),
      Param(st.sampled_from([0, ZCM[2], ZCM[3], ZCM[5]]), st.sampled_from([-1, 1 << 64, "0xzz", "9" * 5000, 1.5, None,
                                                                          HUGE, True, 1 << 36, [0]])),
      Int([32, 64, 128], lo=32, hi=128, bad=[0, 16, 96]), Int([64, 128, 256], lo=8, hi=256, bad=[0, -8, 6, 66]))
entry("ZeroColumnMask.encode", lambda *f: ZeroColumnMask(*f).encode(),
      Param(st.sampled_from([(0, 0, 0, 0), (1, 2, 3, 255)]), st.sampled_from([(256, 0, 0, 0), (-1, 0, 0, 0), (0, 0),
                                                                             "abcd", None, (1.5, 0, 0, 0)])),
      Param(st.sampled_from([(0, 0, 0, 0), (1, 0, 1, 0)]), st.sampled_from([(2, 0, 0, 0), (0,), "0000", None])),
      Flag(), Int([0, 3, 255], lo=0, hi=255), Int([0, 4, 255], lo=0, hi=255), Int([0, 8, 32], lo=0, hi=63))
entry("ZeroColumnMask.validate", lambda v, m, n, ms: ZeroColumnMask.decode(v).validate(m, n, ms),
      Param(st.sampled_from([0, ZCM[2], ZCM[3]])), Int([32, 64, 128], bad=[16, 96, 0]),
      Int([64, 128, 256], bad=[0, 6]), Opt(Int([0, 8, 16, 32], lo=0, bad=[-1])),
      reports=lambda findings: bool(findings))

# device printf and per-instruction traces of Module.launch (tests/fixtures/ptx/calls.ptx: calls, vprintf, assert)
CALLS_MODULE = tptx.load(os.path.join(HERE, "fixtures", "ptx", "calls.ptx"))
entry("ptx.Module.launch(printf, trace)", lambda n, printf, trace: CALLS_MODULE.launch(
    "_Z1kPii", grid=1, block=64, args=[np.zeros(64, np.int32), n], printf=printf, trace=trace),
      Int([64, 40], lo=0, bad=[60]),       # n = 60: thread 60's assert(t < n) fails: a KernelFault (65: none does)
      Name(["collect", "stdout"], bad=["file", "print", "STDOUT"]),
      Opt(Param(st.sampled_from([lambda w, pc, m, c: None, print if False else (lambda *a: None)]),
                st.sampled_from([5, "x", True, object(), [print]]))),
      check=lambda st_: st_["printf"] == ["t=5 v=15 c=1 f=7.500000 s=hi\n"] or pytest.fail(str(st_["printf"])))

# ---- trace files: small valid ones cut from the bundled captures, and hostile mutations ----

TRIPWIRE = os.path.join(tempfile.gettempdir(), f"tcemu_campaign_unpickled_{os.getpid()}")


class _Tripwire:
    """Unpickling it creates the TRIPWIRE file: proof that something unpickled a trace's bytes."""

    def __reduce__(self):
        return open, (TRIPWIRE, "w")


_TRACE_DIR = None


def _cut(name, pick):
    with np.load(os.path.join(TRACES, name)) as z:
        cols = {k: z[k] for k in z.files}
    return pick(cols)


def _cut_addresses(c):
    n = 3
    end = int(c["offsets"][n])
    out = {k: c[k][:n] for k in ("desc", "operand", "dtype", "major", "rows", "k", "n", "replica_mismatches")}
    return dict(out, meta=c["meta"], offsets=c["offsets"][:n + 1], addresses=c["addresses"][:end])


def _cut_numerics(c):
    meta = json.loads(c["meta"].tobytes())
    diag = [j for j, case in enumerate(c["diag_case"]) if meta["instantiations"][int(c["inst"][case])][1] <= 24][:2]
    cases = [int(c["diag_case"][j]) for j in diag]
    regs = [c["diag_regs"][c["diag_offsets"][j]:c["diag_offsets"][j + 1]] for j in diag]
    offs = np.concatenate([[0], np.cumsum([r.size for r in regs])]).astype(np.int64)
    out = {k: c[k][cases] for k in ("seed", "inst", "steps", "scale_d", "digest")}
    return dict(out, meta=c["meta"], diag_case=np.arange(len(cases), dtype=np.int32), diag_offsets=offs,
                diag_regs=np.concatenate(regs))


def _cut_wavefronts(c):
    return {k: (v if k == "meta" else v[:24]) for k, v in c.items()}


def _cut_tma(c):
    n = 3
    end = int(c["offsets"][n])
    return dict(meta=c["meta"], case=c["case"][:n], refused=c["refused"][:n], timed_out=c["timed_out"][:n],
                offsets=c["offsets"][:n + 1], positions=c["positions"][:end], values=c["values"][:end])


def _cut_sp_addresses(c):
    rows = [int(np.flatnonzero(c["operand"] == op)[0]) for op in (0, 1, 2)]  # stored A, B, A from registers
    spans = [c["addresses"][c["offsets"][i]:c["offsets"][i + 1]] for i in rows]
    out = {k: c[k][rows] for k in ("desc", "operand", "dtype", "major", "rows", "k", "n", "check_mismatches")}
    return dict(out, meta=c["meta"], offsets=np.concatenate([[0], np.cumsum([x.size for x in spans])]).astype(np.int64),
                addresses=np.concatenate(spans))


def _cut_sp_metadata(c):
    rows = [0, 1]
    regs = [c["d_regs"][c["d_offsets"][i]:c["d_offsets"][i + 1]] for i in rows]
    out = {k: c[k][rows] for k in ("inst", "cls", "walk", "sp_meta")}
    offsets = np.concatenate([[0], np.cumsum([r.size for r in regs])]).astype(np.int64)
    return dict(out, meta=c["meta"], d_offsets=offsets, d_regs=np.concatenate(regs))


def _cut_sp_numerics(c):
    meta = json.loads(c["meta"].tobytes())
    diag = [j for j, case in enumerate(c["diag_case"]) if meta["instantiations"][int(c["inst"][case])][1] <= 24][:2]
    cases = [int(c["diag_case"][j]) for j in diag]
    regs = [c["diag_regs"][c["diag_offsets"][j]:c["diag_offsets"][j + 1]] for j in diag]
    offs = np.concatenate([[0], np.cumsum([r.size for r in regs])]).astype(np.int64)
    out = {k: c[k][cases] for k in ("seed", "inst", "steps", "scale_d", "cls", "digest")}
    return dict(out, meta=c["meta"], diag_case=np.arange(len(cases), dtype=np.int32), diag_offsets=offs,
                diag_regs=np.concatenate(regs))


def _cut_alu(c):
    """Three forms (an exact one, an integer one, a refused approximate one), their first rows."""
    meta = json.loads(c["meta"].tobytes())
    names = [f["name"] for f in meta["forms"]]
    keep = [names.index(n) for n in ("add.rn.f32", "lop3.b32.0x96", "ex2.approx.f32")]
    rows = np.concatenate([np.flatnonzero(c["op"] == k)[:20] for k in keep])
    remap = {k: i for i, k in enumerate(keep)}
    meta["forms"] = [meta["forms"][k] for k in keep]
    out = {k: c[k][rows] for k in ("a", "b", "c", "e", "d", "d1")}
    return dict(out, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                op=np.array([remap[int(o)] for o in c["op"][rows]], np.int16))


def _cut_kernels(c):
    """One launch (matmul_tma_bf16, 128 x 256 x 64: one CTA, host tensor maps) and its embedded fixture."""
    meta = json.loads(c["meta"].tobytes())
    i = next(j for j, case in enumerate(meta["cases"]) if case["fixture"] == "matmul_tma_bf16" and case["M"] == 128)
    name = meta["cases"][i]["fixture"]
    meta["cases"], meta["fixtures"] = [meta["cases"][i]], {name: meta["fixtures"][name]}
    lo, hi = int(c["offsets"][i]), int(c["offsets"][i + 1])
    out = {k: c[k][i:i + 1] for k in ("seed", "status", "m", "n", "k", "grid")}
    # bits first: the generic "one column cut short" mutation must cut a column that has more than one row
    return dict(meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), bits=c["bits"][lo:hi],
                offsets=np.array([0, hi - lo], np.int64), **out,
                **{f"fixture_{name}_{e}": c[f"fixture_{name}_{e}"] for e in ("ptx", "json")})


def _cut_gemm(c):
    """Two cuBLAS cases: bf16 200 x 136 x 72 (captured, every row stored) and one torch refused (status 1)."""
    meta = json.loads(c["meta"].tobytes())
    rows = [next(j for j, case in enumerate(meta["cases"]) if case["in"] == "bf16" and case["K"] == 72),
            next(j for j, case in enumerate(meta["cases"]) if case["status"] != "ok")]
    meta["cases"] = [meta["cases"][j] for j in rows]
    bits = [c["bits"][c["offsets"][j]:c["offsets"][j + 1]] for j in rows]
    digests = [c["row_digests"][c["digest_offsets"][j]:c["digest_offsets"][j + 1]] for j in rows]
    out = {k: c[k][rows] for k in ("seed", "status", "m", "n", "k", "stored_rows")}
    return dict(meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), bits=np.concatenate(bits),
                offsets=np.concatenate([[0], np.cumsum([b.size for b in bits])]).astype(np.int64),
                row_digests=np.concatenate(digests),
                digest_offsets=np.concatenate([[0], np.cumsum([x.size for x in digests])]).astype(np.int64), **out)


def _cut_launches(c):
    """One recorded CUTLASS launch (pingpong bf16 -> f32, 200 x 136 x 200) and its embedded fixture."""
    meta = json.loads(c["meta"].tobytes())
    i = next(j for j, case in enumerate(meta["cases"]) if case["fixture"] == "cutlass_pingpong_bf16" and
             case["M"] == 200)
    name = meta["cases"][i]["fixture"]
    meta["cases"], meta["fixtures"] = [meta["cases"][i]], {name: meta["fixtures"][name]}
    lo, hi = int(c["offsets"][i]), int(c["offsets"][i + 1])
    out = {k: c[k][i:i + 1] for k in ("seed", "status", "m", "n", "k", "grid")}
    return dict(meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), bits=c["bits"][lo:hi],
                offsets=np.array([0, hi - lo], np.int64), **out,
                **{f"fixture_{name}_{e}": c[f"fixture_{name}_{e}"] for e in ("ptx", "json")})


def _cut_zero_sign(c):
    """Three wgmma_zero_sign cases tcemu's model already gives (dense exact cancellation, the sparse -0 control,
    the dense C = +0 floor control): the rules pending on branch `rules` leave them as they are."""
    meta = json.loads(c["meta"].tobytes())
    names = [g["name"] for g in meta["groups"]]
    rows = [int(np.flatnonzero(c["group"] == names.index(g))[0])
            for g in ("dense_cancel", "sparse_negzero_c", "floor_dense_zeroc")]
    regs = [c["d_regs"][c["d_offsets"][j]:c["d_offsets"][j + 1]] for j in rows]
    out = {k: c[k][rows] for k in ("inst", "group", "scale_d", "sp_meta", "a_off", "a_len", "b_off", "b_len",
                                   "c_off", "c_len")}
    return dict(out, meta=c["meta"], pool=c["pool"], d_regs=np.concatenate(regs),
                d_offsets=np.concatenate([[0], np.cumsum([r.size for r in regs])]).astype(np.int64))


def _with_meta(cols, **changes):
    meta = json.loads(cols["meta"].tobytes())
    meta.update(changes)
    return dict(cols, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8))


def _npy_with_header(shape, dtype="<u4", data=b""):
    """A .npy member whose header declares `shape` but holds only `data`."""
    header = repr({"descr": dtype, "fortran_order": False, "shape": shape}).encode()
    header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data


def _trace_dir():
    """(directory, [(path, bad)]): built once per process."""
    global _TRACE_DIR
    if _TRACE_DIR is not None:
        return _TRACE_DIR
    d = tempfile.mkdtemp(prefix="tcemu_campaign_")
    files = []

    def save(name, cols, bad, compressed=False):
        path = os.path.join(d, name)
        (np.savez_compressed if compressed else np.savez)(path, **cols)
        files.append((path, bad))
        return path

    base = {"addr": _cut("wgmma_addresses_sm90.npz", _cut_addresses),
            "num": _cut("wgmma_numerics_sm90.npz", _cut_numerics),
            "wave": _cut("smem_wavefronts_targeted_sm90.npz", _cut_wavefronts),
            "tma": _cut("tma_tile_sm90.npz", _cut_tma),
            "spaddr": _cut("wgmma_sp_addresses_sm90.npz", _cut_sp_addresses),
            "spmeta": _cut("wgmma_sp_metadata_sm90.npz", _cut_sp_metadata),
            "spnum": _cut("wgmma_sp_numerics_sm90.npz", _cut_sp_numerics),
            "alu": _cut("ptx_alu_sm90.npz", _cut_alu),
            "kern": _cut("triton_kernels_sm90.npz", _cut_kernels),
            "gemm": _cut("torch_gemm_sm90.npz", _cut_gemm),
            "launch": _cut("cutlass_kernels_sm90.npz", _cut_launches),
            "zs": _cut("wgmma_zero_sign_sm90.npz", _cut_zero_sign)}
    for key, cols in base.items():
        save(f"{key}.npz", cols, False)
        save(f"{key}_objects.npz", dict(cols, extra_obj=np.array([_Tripwire()], dtype=object),
                                        **{next(k for k in cols if k != "meta"): np.array([_Tripwire()] * 3,
                                                                                          dtype=object)}), True)
        save(f"{key}_float.npz", {k: (v.astype(np.float64) if k != "meta" else v) for k, v in cols.items()}, True)
        save(f"{key}_meta_deep.npz", dict(cols, meta=np.frombuffer(
            (json.dumps(json.loads(cols["meta"].tobytes()))[:-1] + ', "x": ' + "[" * 20000 + "]" * 20000 + "}")
            .encode(), np.uint8)), True)
        save(f"{key}_meta_bignum.npz", dict(cols, meta=np.frombuffer(
            (json.dumps(json.loads(cols["meta"].tobytes()))[:-1] + ', "x": ' + "9" * 100_000 + "}").encode(),
            np.uint8)), True)
        save(f"{key}_meta_huge.npz", dict(cols, meta=np.frombuffer(b" " * (3 << 20) + cols["meta"].tobytes(),
                                                                    np.uint8)), True)
        save(f"{key}_meta_list.npz", dict(cols, meta=np.frombuffer(b"[1, 2]", np.uint8)), True)
        save(f"{key}_meta_float.npz", dict(cols, meta=cols["meta"].astype(np.float32)), True)
        save(f"{key}_kind.npz", _with_meta(cols, kind="wgmma_numerics" if key != "num" else "smem_wavefronts"), True)
        save(f"{key}_arch.npz", _with_meta(cols, arch="sm80"), True)
        save(f"{key}_version.npz", _with_meta(cols, version=2), True)
        save(f"{key}_missing.npz", {k: v for i, (k, v) in enumerate(cols.items()) if i != 1}, True)
        first = next(k for k in cols if k != "meta")  # one column cut short: it disagrees with the others
        save(f"{key}_short.npz", dict(cols, **{first: cols[first][:1]}), True)
        path = save(f"{key}_unused.npz", dict(cols, unused=np.zeros((200 if CAMPAIGN else 20) << 20, np.uint8)),
                    False, compressed=True)
        data = open(os.path.join(d, f"{key}.npz"), "rb").read()
        for cut in (1, 22, len(data) // 2, len(data) - 1):
            path = os.path.join(d, f"{key}_trunc{cut}.npz")
            open(path, "wb").write(data[:len(data) - cut] if cut < len(data) else data[:1])
            files.append((path, True))
        with zipfile.ZipFile(os.path.join(d, f"{key}_declared.npz"), "w") as zf:  # huge declared shapes
            for k, v in cols.items():
                zf.writestr(k + ".npy", _npy_with_header((1 << 40,), "<u4", v.tobytes()[:64]) if k != "meta"
                            else _npy_with_header(v.shape, "|u1", v.tobytes()))
        files.append((os.path.join(d, f"{key}_declared.npz"), True))
    c = base["num"]
    save("num_steps.npz", dict(c, steps=np.full_like(c["steps"], 0).astype(np.int64) + 10 ** 9), True)
    save("num_inst.npz", dict(c, inst=c["inst"] + 5000), True)
    save("num_diag.npz", dict(c, diag_offsets=c["diag_offsets"] + 1), True)
    save("num_kinds.npz", _with_meta(c, kinds=[["bf16", "bf16", "f16", 0]] * 3), True)
    c = base["addr"]
    save("addr_rows.npz", dict(c, rows=c["rows"] * 0 - 1), True)
    save("addr_dtype.npz", dict(c, dtype=c["dtype"] + 40), True)
    save("addr_offsets.npz", dict(c, offsets=c["offsets"][::-1].copy()), True)
    c = base["tma"]
    save("tma_window.npz", _with_meta(c, window_bytes=10 ** 9), True)
    save("tma_global.npz", _with_meta(c, global_bytes=10 ** 12), True)
    case = c["case"].copy().view(traces.TMA_CASE)
    case["gdim"][:, 0] = 1 << 40  # a view past the 8 MiB buffer
    save("tma_gdim.npz", dict(c, case=case.view(np.uint8).reshape(c["case"].shape)), True)
    c = base["spaddr"]
    save("spaddr_operand.npz", dict(c, operand=c["operand"] + 3), True)
    save("spaddr_k.npz", dict(c, k=c["k"] * 2), True)                  # not the extent of a sparse operand
    save("spaddr_dtypes.npz", _with_meta(c, dtypes=["b1"] * 4), True)
    c = base["spmeta"]
    save("spmeta_kinds.npz", _with_meta(c, kinds=[["tf32", "tf32", "f16", 0]] * 20), True)
    save("spmeta_inst.npz", _with_meta(c, instantiations=[[0, 24, 5, 0, 0, 0, 1, 1]] * 16), True)
    save("spmeta_regs.npz", dict(c, d_offsets=c["d_offsets"] // 2), True)
    save("spmeta_cls.npz", dict(c, cls=c["cls"] + 100), True)
    c = base["spnum"]
    save("spnum_steps.npz", dict(c, steps=np.full_like(c["steps"], 100)), True)
    save("spnum_cls.npz", dict(c, cls=np.full_like(c["cls"], 5)), True)
    save("spnum_diag.npz", dict(c, diag_offsets=c["diag_offsets"] + 1), True)
    c = base["alu"]
    meta = json.loads(c["meta"].tobytes())
    save("alu_src.npz", _with_meta(c, forms=[dict(f, src=["f99"]) for f in meta["forms"]]), True)
    save("alu_forms.npz", _with_meta(c, forms="add.rn.f32"), True)
    save("alu_dst.npz", _with_meta(c, forms=[dict(f, dst=[65]) for f in meta["forms"]]), True)
    save("alu_op.npz", dict(c, op=c["op"] + 3), True)
    save("alu_name.npz", _with_meta(c, forms=[dict(f, name="cvt") for f in meta["forms"]]), None)  # replays, unmatched
    c = base["kern"]
    meta = json.loads(c["meta"].tobytes())
    case, fx = meta["cases"][0], next(iter(meta["fixtures"]))
    save("kern_grid.npz", _with_meta(c, cases=[dict(case, grid=[1 << 20, 1 << 20, 1])]), True)
    save("kern_block.npz", _with_meta(c, cases=[dict(case, block=[4096, 1, 1])]), True)
    save("kern_output.npz", _with_meta(c, cases=[dict(case, output=dict(case["output"], shape=[1 << 30, 1 << 30]))]),
         True)
    save("kern_scratch.npz", _with_meta(c, cases=[dict(case, scratch={"global": {"address": 0, "bytes_per_program":
                                                                                  1 << 20}}, grid=[1 << 16, 1, 1])]),
         True)
    save("kern_role.npz", _with_meta(c, cases=[dict(case, params=[dict(case["params"][0], role="eval")])]), True)
    save("kern_fixture.npz", _with_meta(c, cases=[dict(case, fixture="../etc/passwd")]), True)
    save("kern_name.npz", _with_meta(c, fixtures={"../x": meta["fixtures"][fx]}), True)
    save("kern_digest.npz", dict(c, **{f"fixture_{fx}_ptx": np.concatenate([c[f"fixture_{fx}_ptx"],  # one more line
                                                                            np.frombuffer(b"\n", np.uint8)])}), True)
    save("kern_ptx.npz", _with_meta(dict(c, **{f"fixture_{fx}_ptx": np.frombuffer(b"\xff\xfe", np.uint8)}),
                                    fixtures={fx: dict(meta["fixtures"][fx], ptx_sha256=__import__("hashlib").sha256(
                                        b"\xff\xfe").hexdigest())}), True)
    save("kern_missing.npz", {k: v for k, v in c.items() if not k.endswith("_json")}, True)
    save("kern_cases.npz", _with_meta(c, cases="x"), True)
    save("kern_inputs.npz", _with_meta(c, cases=[dict(case, inputs=[dict(case["inputs"][0], dtype="e5m2")])]), True)
    save("kern_bits.npz", dict(c, bits=c["bits"][:-1], offsets=c["offsets"] - np.array([0, 1])), True)
    c = base["gemm"]
    meta = json.loads(c["meta"].tobytes())
    case, failed = meta["cases"]
    save("gemm_macs.npz", dict(c, m=c["m"] * 0 + 60000, n=c["n"] * 0 + 60000, k=c["k"] * 0 + 60000), True)
    save("gemm_out.npz", _with_meta(c, cases=[dict(case, out="f64"), failed]), True)
    save("gemm_shape.npz", _with_meta(c, cases=[dict(case, inputs=[dict(case["inputs"][0], shape=[1 << 20, 72]),
                                                                   case["inputs"][1]]), failed]), True)
    save("gemm_dtype.npz", _with_meta(c, cases=[dict(case, inputs=[dict(t, dtype="e5m2") for t in case["inputs"]]),
                                                failed]), True)
    save("gemm_kernels.npz", _with_meta(c, cases=[dict(case, kernels=[7]), failed]), True)
    save("gemm_options.npz", _with_meta(c, cases=[dict(case, options="high"), failed]), True)
    save("gemm_scales.npz", _with_meta(c, cases=[dict(case, op="scaled_mm", scales=["1.5", None]), failed],
                                       scales=None), True)
    save("gemm_seed.npz", _with_meta(c, cases=[dict(case, inputs=[dict(t, seed=-1) for t in case["inputs"]]),
                                               failed]), True)
    save("gemm_rows.npz", dict(c, stored_rows=c["stored_rows"] + 1000), True)
    save("gemm_digests.npz", dict(c, digest_offsets=c["digest_offsets"] * 0), True)
    save("gemm_failed.npz", dict(c, status=c["status"] * 0 + 1), True)  # a failed case stores nothing
    save("gemm_cases.npz", _with_meta(c, cases=[case, "x"]), True)
    save("gemm_model.npz", _with_meta(c, cases=[dict(case, op="addmm"), failed]), None)  # not judged: noted only
    c = base["launch"]
    meta = json.loads(c["meta"].tobytes())
    case, fx = meta["cases"][0], next(iter(meta["fixtures"]))
    fj = json.loads(c[f"fixture_{fx}_json"].tobytes())

    def with_record(**changes):  # the embedded json edited, its sha256 updated (a consistent but hostile fixture)
        rec = dict(fj["launches"][case["launch"]], **changes)
        raw = np.frombuffer(json.dumps(dict(fj, launches=[rec if i == case["launch"] else r for i, r in
                                                          enumerate(fj["launches"])])).encode(), np.uint8)
        digests = dict(meta["fixtures"][fx], json_sha256=__import__("hashlib").sha256(raw.tobytes()).hexdigest())
        return _with_meta(dict(c, **{f"fixture_{fx}_json": raw}), fixtures={fx: digests})
    rec = fj["launches"][case["launch"]]
    save("launch_grid.npz", with_record(grid=[1 << 20, 1 << 20, 1]), True)
    save("launch_cluster.npz", with_record(cluster=[64, 1, 1]), True)
    save("launch_buffer.npz", with_record(buffers=[dict(b, storage=[1 << 20, 1 << 20], bytes=1 << 42)
                                                   for b in rec["buffers"]]), True)
    save("launch_storage.npz", with_record(buffers=[dict(b, storage=["200", "136"]) for b in rec["buffers"]]), True)
    save("launch_encode.npz", with_record(encodes=[dict(e, dims=["x"] * e["rank"]) for e in rec["encodes"]]), True)
    save("launch_blob.npz", with_record(param_blob="zz" * 8), True)
    save("launch_role.npz", with_record(buffers=[dict(b, role="input") for b in rec["buffers"]]), True)
    save("launch_entry.npz", with_record(entry="_Z6nosuch"), None)  # a consistent record of another kernel: refused
    save("launch_index.npz", _with_meta(c, cases=[dict(case, launch=99)]), True)
    save("launch_fixture.npz", _with_meta(c, cases=[dict(case, fixture="../x")]), True)
    save("launch_seed.npz", _with_meta(c, cases=[dict(case, seed=case["seed"] ^ 1)]), True)
    save("launch_output.npz", _with_meta(c, cases=[dict(case, output=dict(case["output"], storage=[1 << 20]))]), True)
    save("launch_bits.npz", dict(c, bits=c["bits"][:-1], offsets=c["offsets"] - np.array([0, 1])), True)
    save("launch_json.npz", with_record(), False)  # re-serialised, same record: replays as before
    c = base["zs"]
    meta = json.loads(c["meta"].tobytes())
    save("zs_kinds.npz", _with_meta(c, kinds=[["s8", "s8", "s32"]] * len(meta["kinds"])), True)
    save("zs_inst.npz", _with_meta(c, instantiations=[[0, 0, 7, 1, 1]] * len(meta["instantiations"])), True)
    save("zs_groups.npz", _with_meta(c, groups="dense"), True)
    save("zs_pattern.npz", dict(c, a_off=c["a_off"] * 0 + c["pool"].size - 1, a_len=c["a_len"] * 0 + 2), True)
    save("zs_wide.npz", _with_meta(dict(c, pool=c["pool"] | np.uint32(0xFFFF0000)),   # 32-bit bf16 elements
                                   kinds=[["bf16", "bf16", "f32"]] * len(meta["kinds"])), True)
    save("zs_regs.npz", dict(c, d_offsets=c["d_offsets"] // 2), True)
    save("zs_group.npz", dict(c, group=c["group"] + 1000), True)
    c = base["wave"]
    save("wave_ops.npz", _with_meta(c, ops=["ld.shared.b33"] * 30), True)
    save("wave_mask.npz", dict(c, mask=c["mask"][:3]), True)
    with zipfile.ZipFile(os.path.join(d, "many.npz"), "w") as zf:
        for i in range(100):
            zf.writestr(f"m{i}.npy", b"")
    files.append((os.path.join(d, "many.npz"), True))
    for name, content in (("empty.npz", b""), ("random.npz", bytes(RNG.integers(0, 256, 5000, dtype=np.uint8))),
                          ("text.npz", b"PK\x05\x06" + b"\xff" * 18)):
        open(os.path.join(d, name), "wb").write(content)
        files.append((os.path.join(d, name), True))
    os.mkfifo(os.path.join(d, "fifo.npz"))
    os.mkdir(os.path.join(d, "dir.npz"))
    os.symlink("/dev/zero", os.path.join(d, "zero.npz"))
    os.symlink("loop.npz", os.path.join(d, "loop.npz"))
    files += [(os.path.join(d, n), True) for n in ("fifo.npz", "dir.npz", "zero.npz", "loop.npz", "nonexistent.npz")]
    _TRACE_DIR = (d, files)
    return _TRACE_DIR


def _mutated(data, how, where, value):
    """A valid trace's bytes with one byte flipped, a region zeroed or the file cut."""
    where = where % max(len(data), 1)
    if how == "flip":
        return data[:where] + bytes([data[where] ^ value]) + data[where + 1:]
    if how == "zero":
        return data[:where] + bytes(min(value, len(data) - where)) + data[where + value:]
    return data[:where]


@st.composite
def trace_files(draw):
    """(path, bad): a crafted file (bad: it must be refused), a valid small trace, or a random mutation of one
    (bad None: it may replay or be refused, but nothing else)."""
    d, files = _trace_dir()
    kind = draw(st.integers(0, 9))
    if kind < 6:
        return draw(st.sampled_from(files))
    src = draw(st.sampled_from([p for p, bad in files if not bad]))
    data = open(src, "rb").read()
    how = draw(st.sampled_from(["flip", "zero", "cut"]))
    out = os.path.join(d, f"mutated_{os.getpid()}.npz")
    with open(out, "wb") as fh:
        fh.write(_mutated(data, how, draw(st.integers(0, len(data))), draw(st.integers(1, 255))))
    return out, (True if how == "cut" else None)


TRACE_FILE = Param(trace_files())


def _replay(path_bad):
    path, bad = path_bad
    result = traces.replay(path)
    if bad is False:
        assert result.ok, f"{path}: a valid trace must replay as a match"
    assert not bad, f"{path}: a crafted trace that must be refused replayed ({len(result.groups)} groups)"
    return result


entry("traces.replay", lambda t: _replay(t), Param(trace_files()), weight=1.5)


# ---- the CLI: argv lists, valid and hostile ----

def _png(d):
    return os.path.join(d, "tcemu_campaign.png")


@st.composite
def cli_argv(draw):
    """(argv, bad): one tcemu invocation; bad=True when some argument must make it fail."""
    tmp = tempfile.gettempdir()
    bad = False

    def pick(valid, hostile, p=0.2):
        nonlocal bad
        if draw(st.integers(0, 99)) < p * 100:
            bad = True
            return draw(st.sampled_from(hostile))
        return draw(st.sampled_from(valid))

    desc90 = [hex(d.encode()) for d in D90]
    bad_desc = ["0xzz", "0x" + "f" * 5000, "9" * 5000, "-1", hex(1 << 64), "", "1e3", "0x" + "_" * 10]
    bad_int = ["-1", "0", "1e400", "nan", "x", "9" * 5000, "0x10"]
    bad_png = ["/nonexistent/x.png", "noext", tmp, "/proc/tcemu_x.png", "x.jpg", ""]
    cmd = draw(st.sampled_from(["decode", "addresses", "explain", "instr", "swizzle", "banks", "fuzz", "replay", "run",
                                "serve"]))
    if cmd == "decode":
        argv = ["decode", pick(desc90, bad_desc)]
        if draw(st.booleans()):
            argv += ["--dtype", pick(["bf16", "tf32", "u8"], ["x", "f32", "", "b" * 3000])]
        if draw(st.booleans()):
            argv += ["--arch", pick(["sm90", "sm100"], ["sm80", "", "SM90"])]
    elif cmd == "addresses":
        argv = ["addresses", pick(desc90, bad_desc), "--rows", pick(["8", "64"], bad_int), "--k",
                pick(["16"], bad_int), "--dtype", pick(["bf16", "f16"], ["x", "b1 "])]
        if draw(st.booleans()):
            argv.append("--json")
    elif cmd == "explain" and draw(st.integers(0, 4)):
        argv = ["explain", pick(desc90, bad_desc), "--dtype", pick(["bf16", "e4m3"], ["x"]), "--rows",
                pick(["64", "8"], bad_int)]
        if draw(st.integers(0, 9)) == 0:
            argv += ["--png", pick([_png(tmp)], bad_png, 0.7)]
        if draw(st.integers(0, 3)) == 0:  # main's options: the resident tile, the sparse operand, the HTML page
            argv += ["--tile", pick(["64x256", "128x64"], ["x", "0x0", "-64x16", "9" * 5000, "64", "64x16x2"])]
        if draw(st.integers(0, 5)) == 0:
            argv += ["--sparse", "--operand", pick(["a", "b"], ["c"])]
        if draw(st.integers(0, 9)) == 0:
            argv += ["--html", pick([os.path.join(tmp, "tcemu_campaign.html")],
                                    ["/nonexistent/x.html", "x.htm", tmp, "/proc/tcemu.html", ""], 0.7)]
    elif cmd == "explain":
        if True:
            argv = ["explain", pick([hex(d.encode()) for d in D100], bad_desc), "--instr",
                    pick(["0x8400490", "0x10400490"], ["0xzz", "-1", hex((1 << 32) | 1), "0x" + "f" * 5000]),
                    "--kind", pick(["f16"], ["x", "f32"]), "--operand", pick(["a", "b"], ["c"])]
    elif cmd == "instr":
        argv = ["instr", pick(["0x8400490", "0x4000490"], bad_desc), "--kind", pick(["f16", "tf32"], ["x", ""])]
    elif cmd == "swizzle":
        argv = ["swizzle", pick(["128B", "64B", "none"], ["16B", "x", "9" * 5000]), "--png",
                pick([_png(tmp)], bad_png, 0.7), "--base-offset", pick(["0", "3"], ["-1", "8", "9" * 5000, "x"])]
        if not bad and draw(st.integers(0, 3)):  # pictures are slow: mostly hostile ones
            argv[3], bad = draw(st.sampled_from(bad_png)), True
    elif cmd == "banks":
        argv = ["banks", "--op", pick(["ld.shared.b32", "ldmatrix.x4", "ld.shared.v4.b32"],
                                      ["ld.shared.b33", "", "x" * 5000])]
        source = draw(st.integers(0, 2))
        if source == 0:
            argv += ["--pattern", pick(["(t % 8) * 128 + (t // 8) * 16", "t * 16"],
                                       ["__import__('os').system('true')", "(" * 300 + "t" + ")" * 300,
                                        "+".join(["t"] * 400), "*".join(["(t<<63)"] * 40), "t ** 99", "t // 0",
                                        "9" * 5000, "x" * 2000])]
        elif source == 1:
            argv += ["--addresses", pick([" ".join(str(16 * t) for t in range(32))],
                                         ["1 2 3", "x " * 32, " ".join(["9" * 5000] * 32), "0x10," * 40])]
        else:
            argv += ["--desc", pick(desc90, bad_desc), "--rows-expr", pick(["t % 8"], ["t - 100", "x"]),
                     "--cols-expr", pick(["8 * (t // 8)"], ["t * 1000"])]
        argv += ["--mask", pick(["0xffffffff", "0x0000ffff"], ["zz", "-1", hex(1 << 32), "9" * 5000, "1e3"])]
        if draw(st.integers(0, 9)) == 0:
            argv += ["--png", pick([_png(tmp)], bad_png, 0.8)]
    elif cmd == "fuzz":
        argv = ["fuzz", "--seconds", pick(["0", "0.01"], ["-1", "1e400", "nan", "inf", "1e9", "x"]),
                "--seed", pick(["0", "5"], ["-1", "x", "1.5", str(1 << 64)]),
                "--arch", pick(["sm90", "sm100"], ["sm80"])]
    elif cmd == "run":
        ptx = os.path.join(tmp, f"tcemu_campaign_{os.getpid()}.ptx")
        if not os.path.exists(ptx):
            with open(ptx, "w") as fh:
                fh.write(TID_PTX)
        argv = ["run", pick([ptx], ["/nonexistent/k.ptx", tmp, "/dev/null", os.path.join(HERE, "test_campaign.py")]),
                "--quiet", "--grid", pick(["1", "2"], bad_int[:-1] + ["1x1x1x1", "4294967296"]),
                "--block", pick(["64", "32x2"], ["0", "2048", "x", "9" * 5000, "33x33"]),
                "--arg", pick(["zeros:u32:64"], ["/etc/passwd.npy", "zeros:u32:100000x100000", "zeros:x:4", "1.5",
                                                 "random:u32:" + "9" * 5000, "tensormap:a:64", "random:bf16:64:x",
                                                 "random:bf16:64:" + "9" * 5000, "/dev/null.npy"]),
                "--arg", pick(["64", "0"], ["-1", "x", "1e3", "4294967296", "9" * 5000])]
        if draw(st.integers(0, 4)) == 0:
            argv += ["--kernel", pick(["store_tid"], ["nope", "DONE", ""])]
        if draw(st.integers(0, 4)) == 0:
            argv += ["--save", pick([os.path.join(tmp, "tcemu_campaign_save")], ["/proc/tcemu_save", "/dev/null/x"])]
    elif cmd == "serve":  # only hostile ports: a valid one would serve forever
        argv, bad = ["serve", "--port", draw(st.sampled_from(["-1", "65536", "x", "9" * 5000, "1e3", ""]))], True
    else:
        path, file_bad = draw(trace_files())
        argv = ["replay", path]
        bad = bool(file_bad) or (file_bad is None and None)
    return argv, bad


def _cli(argv_bad):
    """Run tcemu in-process; returns (rc, stderr). SystemExit (argparse) counts as its code."""
    argv, _ = argv_bad
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli_main(argv)
        except SystemExit as e:  # argparse: usage and a one-line error, exit 2
            rc = e.code
    return rc, err.getvalue()


# ---- the harness ----

def _classify(name, thunk, judge):
    """Run one call and tally its outcome: judge(result) -> (outcome, detail) when it returns."""
    def alarm(signum, frame):
        raise Hang()

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
    # a loop inside a numba kernel cannot be interrupted: past 6 x HANG_SECONDS the watchdog ends the process
    # with every thread's traceback (a visible failure, never a silent stall)
    faulthandler.dump_traceback_later(6 * HANG_SECONDS, exit=True)
    t0 = time.perf_counter()
    try:
        outcome, detail = judge(thunk())
    except Hang:
        outcome, detail = "hang", f"ran past {HANG_SECONDS} s"
    except TcemuError as e:
        ok = isinstance(e, ValueError) and isinstance(e.field, str) and e.field and e.field in str(e) and \
            len(str(e)) < 4000
        outcome, detail = ("clean error" if ok else "other exception"), f"{type(e).__name__}: {str(e)[:300]}"
    except AssertionError:
        raise
    except Exception as e:  # noqa: BLE001 - the campaign's job is to see every other exception
        outcome, detail = "other exception", f"{type(e).__name__}: {str(e)[:300]}"
    finally:
        faulthandler.cancel_dump_traceback_later()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    if time.perf_counter() - t0 > HANG_SECONDS and outcome != "hang":
        outcome, detail = "hang", f"took {time.perf_counter() - t0:.1f} s"
    TALLY[(name, outcome)] += 1
    return outcome, detail


def _examples(weight):
    if CAMPAIGN:
        total = sum(e.weight for e in ENTRIES) + CLI_WEIGHT
        return max(20, int(CAMPAIGN_CALLS * weight / total))
    return max(2, int(CI_CALLS * weight))


def _draw_call(data, e):
    """Positional and keyword values for one call of `e`, and whether one of them is bad."""
    params = [(i, p) for i, p in enumerate(e.args)] + list(e.kwargs.items())
    mode = data.draw(st.sampled_from(["valid"] * 3 + ["bad"] * 5 + ["odd"] * 2), label="mode")
    choosable = [k for k, p in params if (p.bad if mode == "bad" else p.odd) is not None] if mode != "valid" else []
    target = data.draw(st.sampled_from(choosable), label="target") if choosable else None
    values = {}
    for key, p in params:
        if key == target:
            values[key] = data.draw(p.bad if mode == "bad" else p.odd, label=f"{key} ({mode})")
        else:
            values[key] = data.draw(p.valid, label=str(key))
    args = [values[i] for i in range(len(e.args))]
    kwargs = {k: values[k] for k in e.kwargs}
    return args, kwargs, target is not None and mode == "bad"


def _judge_call(bad, check, reports):
    def judge(result):
        if bad and reports is not None and reports(result):
            return "clean error", "reported in the result"
        if bad:
            return "silently accepted", f"returned {type(result).__name__}"
        if check is not None:
            check(result)
        return "accepted", ""
    return judge


def _settings(weight):
    return settings(max_examples=_examples(weight), suppress_health_check=list(HealthCheck), deadline=None)


@pytest.fixture(scope="module", autouse=True)
def _compiled():
    """numba compiles a kernel at its first call (about 10 s for the matmul engines on a cold cache, as in CI's
    fresh clone): compile them before the hang alarm times any call."""
    for kw in ({}, {"engine": "reference"}, {"init": "none", "promote_every": 1, "split_k": 2, "out_dtype": "bf16"}):
        tcemu.matmul(MM_A, MM_B, dtype_a="bf16", dtype_b="bf16", **kw)
    tcemu.matmul(FP8_A, FP8_B, dtype_a="e4m3", dtype_b="e4m3", promote_every=4,
                 scales=tcemu.BlockScales(SCALE_A, SCALE_B, 1, 128, 128))


@pytest.mark.parametrize("e", ENTRIES, ids=lambda e: e.name)
def test_entry_point(e):
    @_settings(e.weight)
    @given(data=st.data())
    def run(data):
        args, kwargs, bad = _draw_call(data, e)
        outcome, detail = _classify(e.name, lambda: e.fn(*args, **kwargs), _judge_call(bad, e.check, e.reports))
        assert outcome not in FAILURES, f"{e.name}: {outcome}: {detail}"
    run()


CLI_WEIGHT = 3


def _judge_cli(argv, bad):
    def judge(rc_err):
        rc, err = rc_err
        if "Traceback" in err:
            return "other exception", f"a traceback: {err[-1500:]}"
        if rc in (0, 1):  # 1: findings or mismatches reported on stdout
            if bad and rc == 0:
                return "silently accepted", "exit 0"
            return ("clean error" if rc == 1 and bad else "accepted"), ""
        lines = [ln for ln in err.splitlines() if ln.strip()]
        one_line = lines and len(lines) <= 3 and (lines[-1].startswith("tcemu: error:") or
                                                  lines[-1].startswith("tcemu "))
        if not isinstance(rc, int) or not one_line:
            return "other exception", f"exit {rc!r}, stderr {err[-500:]!r}"
        return "clean error", ""
    return judge


@_settings(CLI_WEIGHT)
@given(cli_argv())
def test_cli(argv_bad):
    argv, bad = argv_bad
    outcome, detail = _classify("cli " + argv[0], lambda: _cli(argv_bad), _judge_cli(argv, bad))
    assert outcome not in FAILURES, f"{[a[:60] for a in argv]}: {outcome}: {detail}"


# ---- process-level checks: crashes, memory, pickles ----

CRASH_CASES = {
    "wavefronts_batch, 300,000 patterns, 3 masks": "import numpy as np; from tcemu.banks import wavefronts_batch as w; "
    "w('ld.shared.b32', np.zeros((300_000, 32), np.int64), np.zeros(3, np.int64))",
    "tensor_view reaching 1 TiB past its buffer": "import numpy as np; from tcemu.layout.tma import tensor_view as v; "
    "t = v(np.zeros(64, np.uint8), 0, 8, [1 << 20, 1 << 20], [1 << 20]); print(int(t[-1, -1]))",
    "tma_load of a 256^5 box": "import numpy as np; import tcemu; tcemu.tma_load(tcemu.SharedMemory(), 0, "
    "np.zeros((2, 2, 2, 2, 16), np.uint8), box=[256] * 5, coords=[0] * 5)",
}


@pytest.mark.parametrize("name", list(CRASH_CASES))
def test_crash_isolation(name):
    """The memory-safety reproducers of issue 17 in a subprocess: a clean TcemuError, not a dead process."""
    code = (f"import sys\nfrom tcemu import TcemuError\ntry:\n    {CRASH_CASES[name]}\n"
            "except TcemuError as e:\n    print(type(e).__name__, e.field)\n    sys.exit(3)\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, ".."))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    outcome = "clean error" if proc.returncode == 3 else \
        "crash" if proc.returncode < 0 else "other exception" if proc.returncode else "silently accepted"
    TALLY[("subprocess " + name, outcome)] += 1
    assert outcome == "clean error", f"{name}: rc {proc.returncode}, {proc.stdout[-300:]} {proc.stderr[-600:]}"


def test_no_trace_was_unpickled():
    """Runs after the trace entries (file order): the tripwire objects in crafted traces were never unpickled."""
    _, files = _trace_dir()
    for path, _ in files:
        if "objects" in path:
            with pytest.raises(TcemuError, match="object"):
                traces.load_trace(path)
    assert not os.path.exists(TRIPWIRE), "a trace's object array was unpickled"


@pytest.fixture(scope="module", autouse=True)
def _campaign_limits():
    """Campaign profile: cap the address space so a memory blow-up is a MemoryError (an 'other exception'),
    not the machine's OOM killer; report the tally at the end."""
    old = resource.getrlimit(resource.RLIMIT_AS)
    if CAMPAIGN:
        vsz = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) * 1024
        cap = vsz + (8 << 30)
        resource.setrlimit(resource.RLIMIT_AS, (cap if old[1] == resource.RLIM_INFINITY else min(cap, old[1]), old[1]))
    yield
    resource.setrlimit(resource.RLIMIT_AS, old)
    path = os.environ.get("TCEMU_CAMPAIGN_REPORT")
    if path:
        per = {}
        for (name, outcome), n in sorted(TALLY.items()):
            per.setdefault(name, {})[outcome] = n
        totals = Counter()
        for (_, outcome), n in TALLY.items():
            totals[outcome] += n
        with open(path, "w") as fh:
            json.dump({"profile": "campaign" if CAMPAIGN else "ci", "calls": sum(TALLY.values()),
                       "outcomes": dict(totals), "entries": per,
                       "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}, fh, indent=1)
    d = _TRACE_DIR[0] if _TRACE_DIR else None
    if d:
        shutil.rmtree(d, ignore_errors=True)
