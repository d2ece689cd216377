"""Hostile-input campaign (issue 13 "Hostile inputs", issue 17): every public entry point and CLI subcommand,
called as a careless or hostile user would.

The rule it holds tcemu to (README, "Bad input"): a bad input raises TcemuError (a ValueError) whose `field`
names the parameter, never another exception (no TypeError, no numba or numpy error); a call never hangs, never
blows up memory, never crashes the process, and no trace file is ever unpickled. The CLI turns every such
error into one line and a nonzero exit, without a traceback.

Each call is classed: "accepted" (valid input, a result), "clean error" (TcemuError naming its field), and the
failures "silently accepted" (an input the registry marks bad gave a result), "other exception", "hang" (over
HANG_SECONDS) and "crash" (a process died: test_crash_isolation runs those cases in subprocesses).

The harness and the values every part shares live here; each package's entry points are registered in its own
test file, tests/<package>/test_hostile_campaign.py (layout, hopper, blackwell, arith, tools, traces, testing, ptx,
frontends, serve, gemm; the CLI's argv campaign in tests/cli/test_hostile_campaign.py).

The registry: one `entry(...)` line per public function, in the test file of its package. Every parameter is a
`Param`: valid values, values that must be refused ("bad"), and harmless variants ("odd": numpy scalars, read-only
and non-contiguous arrays). Each call keeps every parameter valid, or makes exactly one of them bad, or one of them
odd. To add a public function:

    ENTRIES = Registry()
    entry = ENTRIES.entry
    entry("check.whole_tile", check_tile, WRITTEN, DESC90, dtype=DTYPE90, arch=Const("sm90"))
    ...
    test_entry_point = ENTRIES.test()

ci profile: a few calls per entry (seconds in all); HYPOTHESIS_PROFILE=campaign: CAMPAIGN_CALLS calls over the
whole campaign (every file), spread over the entries by weight. TCEMU_CAMPAIGN_REPORT=path writes the tally (calls
per entry and outcome) as JSON.
"""
import atexit
import faulthandler
import json
import os
import resource
import shutil
import signal
import tempfile
import time
import zipfile
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tcemu
import tcemu.ptx as tptx
from tcemu import TcemuError
from tcemu.blackwell.tmem import TensorMemory
from tcemu.hopper import sparse
from tcemu.layout.descriptors import UmmaDescriptor
from tcemu.layout.smem import SharedMemory
from tcemu import traces

from paths import TRACES

CAMPAIGN = os.environ.get("HYPOTHESIS_PROFILE") == "campaign"
CAMPAIGN_CALLS = 60_000   # in all, under HYPOTHESIS_PROFILE=campaign
CI_CALLS = int(os.environ.get("TCEMU_CI_CALLS", 10))  # per entry of weight 1 in the ci profile
HANG_SECONDS = 10.0
# The first call of an entry in a process may compile numba kernels (seconds each on a cold cache, as in CI's fresh
# clone, and far more on a loaded machine); it gets FIRST_CALL_SECONDS. Which entry pays for a kernel's compile
# depends on the order the files run in, so no entry's first call is held to HANG_SECONDS.
FIRST_CALL_SECONDS = 4 * HANG_SECONDS
_CALLED = set()
# The sum of every entry's weight and CLI_WEIGHT (114.4 when the campaign was split into one file per package):
# each entry's share of CAMPAIGN_CALLS stays what it was, whichever files run.
TOTAL_WEIGHT = 114.4
CLI_WEIGHT = 3

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
    slow: bool = False      # its calls take seconds each (whole-kernel replays): marked slow


class Registry(list):
    """A test file's entries: `entry = ENTRIES.entry` registers one, `test_entry_point = ENTRIES.test()` makes the
    test that calls each (parametrized by entry name)."""

    def entry(self, name, fn, *args, weight=1.0, check=None, reports=None, slow=False, **kwargs):
        self.append(Entry(name, fn, args, kwargs, weight, check, reports, slow))

    def test(self):
        @pytest.mark.parametrize("e", [pytest.param(e, marks=pytest.mark.slow) if e.slow else e for e in self],
                                 ids=lambda e: e.name)
        def test_entry_point(e):
            run_entry(e)
        return test_entry_point


def _has_error_finding(findings):
    return any(f.severity == "error" for f in findings)


def _fresh(method):
    """Call method on a fresh SharedMemory (sm90): writes do not leak between calls."""
    return lambda *a, **kw: getattr(SharedMemory(), method)(*a, **kw)


# the sparse wgmma metadata registers of tests/hopper and tests/tools: every chunk keeps elements 0 and 1

SP_META = sparse.meta_registers(np.full((64, 8), 0x4, np.uint8), "bf16")


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


TID_MODULE = tptx.load(TID_PTX)


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
    atexit.register(shutil.rmtree, d, ignore_errors=True)   # one set of files for every test file of the campaign
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


# ---- the harness ----

def _classify(name, thunk, judge):
    """Run one call and tally its outcome: judge(result) -> (outcome, detail) when it returns."""
    def alarm(signum, frame):
        raise Hang()

    limit = HANG_SECONDS if name in _CALLED else FIRST_CALL_SECONDS
    _CALLED.add(name)
    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    # a loop inside a numba kernel cannot be interrupted: past 6 x HANG_SECONDS the watchdog ends the process
    # with every thread's traceback (a visible failure, never a silent stall)
    faulthandler.dump_traceback_later(6 * HANG_SECONDS, exit=True)
    t0 = time.perf_counter()
    try:
        outcome, detail = judge(thunk())
    except Hang:
        outcome, detail = "hang", f"ran past {limit} s"
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
    if time.perf_counter() - t0 > limit and outcome != "hang":
        outcome, detail = "hang", f"took {time.perf_counter() - t0:.1f} s"
    TALLY[(name, outcome)] += 1
    return outcome, detail


def _examples(weight):
    if CAMPAIGN:
        return max(20, int(CAMPAIGN_CALLS * weight / TOTAL_WEIGHT))
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


def run_entry(e):
    """Calls of entry `e` drawn by hypothesis, each classified; a failure outcome fails the test."""
    @_settings(e.weight)
    @given(data=st.data())
    def run(data):
        args, kwargs, bad = _draw_call(data, e)
        outcome, detail = _classify(e.name, lambda: e.fn(*args, **kwargs), _judge_call(bad, e.check, e.reports))
        assert outcome not in FAILURES, f"{e.name}: {outcome}: {detail}"
    run()


@pytest.fixture(scope="module")
def campaign_limits():
    """Campaign profile: cap the address space so a memory blow-up is a MemoryError (an 'other exception'),
    not the machine's OOM killer; report the tally (of every test file run so far) at the end of each file.
    Every test file of the campaign uses it: `pytestmark = pytest.mark.usefixtures("campaign_limits")`."""
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
