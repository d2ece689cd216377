"""tcemu.traces.seeds must reproduce the input generator of scripts/capture_numerics.cu bit for bit.

The main test extracts the generator (and fill_operand) from the CUDA source at test time, makes it
host-callable, compiles it with nvcc for the host and compares every value with tcemu.traces.seeds. The other
tests need no compiler: exact splitmix64 values, a scalar Python-int port of the C code, the KF/FMTS
tables parsed from the source, and a digest pinned from a run that matched the CUDA build.
"""
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tcemu.traces import seeds as S

from paths import CAPTURE, TRACES

CU = Path(CAPTURE) / "capture_numerics.cu"
TRACE = Path(TRACES) / "wgmma_numerics_sm90.npz"
M64 = (1 << 64) - 1
M32 = (1 << 32) - 1


# ---------------------------------------------------------------- test cases

def _case_list():
    """(seed, kind, step, b_rows, c_cols, mn_major): every kind x every (mode, specials)."""
    cands = np.random.default_rng(20261121).integers(0, 2**64 - 1, size=4000, dtype=np.uint64, endpoint=True)
    pool = {(m, s): [] for m in range(6) for s in (0, 1)}
    for seed in [0, M64, 2611, 1 << 63] + [int(x) for x in cands]:
        p = S.case_params(seed, 0)
        if len(pool[p.mode, p.specials]) < len(S.NUMERICS_KINDS):
            pool[p.mode, p.specials].append(seed)
    assert all(len(v) == len(S.NUMERICS_KINDS) for v in pool.values()), "seed search ran short"
    cases = []
    for kind in range(len(S.NUMERICS_KINDS)):
        sixteen = S.KIND_FORMATS[kind].bits == 16
        for j, key in enumerate(sorted(pool)):
            cases.append((pool[key][kind], kind, j % 3, 256 if j == 0 else 24, 256 if j == 1 else 24,
                          int(sixteen and j % 2 == 1)))
    # case_params' clamp of the C centre at both ends, for f32 (kinds 0, 3) and f16 (kinds 2, 8) accumulators
    for kind, cc in ((0, 1), (0, 254), (3, 1), (3, 254), (2, 1), (2, 30), (8, 1), (8, 30)):
        seed = next(int(x) for x in cands if S.case_params(int(x), kind).cc == cc)
        cases.append((seed, kind, 1, 24, 24, 0))
    return cases


CASES = _case_list()
RND_TRIPLES = [(0, 0, 0), (M64, M32, M32), (1 << 63, 3, 0), (0x0123456789ABCDEF, 0x80000000, 12345),
               (2611, 2, 255), (M64 - 5, 17, 1 << 31)]
MIX_INPUTS = [0, 1, 2, M64, 1 << 63, 0x9E3779B97F4A7C15, 0x61C8864680B583EB, 0xDEADBEEFCAFEBABE]


# ---------------------------------------------------------------- the host build

def _between(text, start, stop):
    lines = text.splitlines(keepends=True)
    i = next(n for n, ln in enumerate(lines) if ln.startswith(start))
    j = next(n for n in range(i + 1, len(lines)) if lines[n].startswith(stop))
    return "".join(lines[i:j])


def host_source():
    text = CU.read_text()
    gen = _between(text, "// ---- the generator", "// Write operand rows")
    fill = _between(text, "// Write operand rows", "__device__ __forceinline__ uint64_t desc_of")
    # constants: __constant__ on the device side, plain static const arrays on the host side
    gen = re.sub(r"^__device__ __constant__ ([^;]*;)", r"#ifdef __CUDA_ARCH__\n@DC@ \1\n#else\nstatic const \1\n#endif",
                 gen, flags=re.M | re.S)
    fill = fill.replace("threadIdx.x", "0").replace("blockDim.x", "1")  # one host "thread" does every idx
    body = (gen + fill).replace("__device__ __forceinline__", "@HD@").replace("__device__", "@HD@")
    body = body.replace("@HD@", "__host__ __device__").replace("@DC@", "__device__ __constant__")
    assert "threadIdx" not in body and "uint64_t mix64" in body and "KF[21]" in body
    cases = ",\n".join(f"  {{{s}ull, {k}, {st}, {nb}, {nc}, {mn}}}" for s, k, st, nb, nc, mn in CASES)
    triples = ", ".join(f"{{{a}ull, {b}u, {c}u}}" for a, b, c in RND_TRIPLES)
    mixes = ", ".join(f"{z}ull" for z in MIX_INPUTS)
    return f"""#include <cstdint>
#include <cstdio>
{body}
struct TC {{ uint64_t seed; int kind, step, nb, nc, mn; }};
static const TC TCS[] = {{
{cases}}};
struct RT {{ uint64_t seed; uint32_t stream, index; }};
static const RT RTS[] = {{{triples}}};
static const uint64_t MIXES[] = {{{mixes}}};
static FILE* out;
static void put(uint32_t v) {{ fwrite(&v, 4, 1, out); }}
static void put64(uint64_t v) {{ put(static_cast<uint32_t>(v)); put(static_cast<uint32_t>(v >> 32)); }}
static uint8_t smem[8192];
static void fill(int bits, int rows, bool mn, uint64_t seed, uint32_t stream, int fmt, int center, const Params& p) {{
  if (bits == 32) fill_operand<32>(smem, 0, rows, mn, seed, stream, fmt, center, p);
  else if (bits == 16) fill_operand<16>(smem, 0, rows, mn, seed, stream, fmt, center, p);
  else if (bits == 8) fill_operand<8>(smem, 0, rows, mn, seed, stream, fmt, center, p);
  else fill_operand<1>(smem, 0, rows, mn, seed, stream, fmt, center, p);
  for (int i = 0; i < rows * 32; ++i) put(smem[i]);
}}
int main(int argc, char** argv) {{
  out = fopen(argv[1], "wb");
  for (uint64_t z : MIXES) put64(mix64(z));
  for (const RT& t : RTS) put64(rnd(t.seed, t.stream, t.index));
  for (int k = 0; k < 21; ++k) {{ put(KF[k].fa); put(KF[k].fb); put(KF[k].fc); put(KF[k].bits); }}
  for (const TC& tc : TCS) {{
    const KindFmt kf = KF[tc.kind];
    const Params p = case_params(tc.seed, kf.fa, kf.fb, kf.fc);
    put(p.mode); put(p.specials); put(p.ca); put(p.cb); put(p.cc);
    const int K = kf.bits == 1 ? 32 : 256 / kf.bits, s = tc.step;
    for (int idx = 0; idx < 64 * K; ++idx) put(gen_elem(rnd(tc.seed, 16 * s, idx), kf.fa, p.ca, p));
    for (int idx = 0; idx < tc.nb * K; ++idx) put(gen_elem(rnd(tc.seed, 16 * s + 1, idx), kf.fb, p.cb, p));
    fill(kf.bits, 64, tc.mn, tc.seed, 16 * s, kf.fa, p.ca, p);
    fill(kf.bits, tc.nb, tc.mn, tc.seed, 16 * s + 1, kf.fb, p.cb, p);
    const int N = tc.nc, NR = kf.fc == 2 ? N / 4 : N / 2;  // C into the D fragment, as the kernel
    for (int t = 0; t < 128; ++t) {{
      const int w = t / 32, l = t % 32;
      for (int j = 0; j < NR; ++j) {{
        uint32_t word = 0;
        const int per = (kf.fc == 2) ? 2 : 1;
        for (int h = 0; h < per; ++h) {{
          const int i = j * per + h;
          const int row = 16 * w + l / 4 + 8 * ((i / 2) % 2), col = 8 * (i / 4) + (l % 4) * 2 + (i % 2);
          const uint64_t r = rnd(tc.seed, 2, static_cast<uint32_t>(row * N + col));
          const uint32_t v = kf.fc == 8 ? gen_int32(r, p.mode) : gen_float(r, kf.fc, p.cc, p);
          word |= v << (16 * h);
        }}
        put(word);
      }}
    }}
    for (int t = 0; t < 128; ++t) {{  // register A, as the kernel
      uint32_t a[4] = {{0, 0, 0, 0}};
      const int per = kf.bits == 1 ? 1 : 32 / kf.bits;
      for (int i = 0; i < 4; ++i)
        for (int e = 0; e < per; ++e) {{
          const uint64_t r = rnd(tc.seed, 16 * s + 4, static_cast<uint32_t>((t * 4 + i) * per + e));
          const uint32_t v = kf.bits == 1 ? static_cast<uint32_t>(r) : gen_elem(r, kf.fa, p.ca, p);
          a[i] |= kf.bits >= 32 || kf.bits == 1 ? v : (v & ((1u << kf.bits) - 1)) << (kf.bits * e);
        }}
      for (int i = 0; i < 4; ++i) put(a[i]);
    }}
  }}
  fclose(out);
  return 0;
}}
"""


@pytest.fixture(scope="module")
def cuda_dump(tmp_path_factory):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not on PATH: cannot host-compile the CUDA generator of scripts/capture_numerics.cu")
    d = tmp_path_factory.mktemp("seeds_host")
    (d / "gen.cu").write_text(host_source())
    subprocess.run([nvcc, "-std=c++17", "-O1", "-x", "cu", "-o", str(d / "gen"), str(d / "gen.cu")],
                   check=True, capture_output=True, text=True, timeout=120)
    subprocess.run([str(d / "gen"), str(d / "out.bin")], check=True, timeout=60)
    return np.fromfile(d / "out.bin", np.uint32)


class _Reader:
    def __init__(self, words):
        self.words, self.pos = words, 0

    def take(self, n):
        out = self.words[self.pos:self.pos + n]
        assert out.size == n, "host dump ended early"
        self.pos += n
        return out

    def take64(self, n):
        w = self.take(2 * n).astype(np.uint64)
        return w[0::2] | (w[1::2] << np.uint64(32))


def _fragment_words(c, fc):
    """C (64, N) packed into the kernel's D fragment, (128, NR)."""
    n = c.shape[1]
    per = 2 if fc == 2 else 1
    nr = n // 4 if fc == 2 else n // 2
    t = np.arange(128)[:, None]
    w, l = t // 32, t % 32
    words = np.zeros((128, nr), np.uint32)
    for h in range(per):
        i = np.arange(nr)[None, :] * per + h
        row, col = 16 * w + l // 4 + 8 * ((i // 2) % 2), 8 * (i // 4) + (l % 4) * 2 + i % 2
        words |= c[row, col].astype(np.uint32) << np.uint32(16 * h)
    return words


@pytest.mark.needs_nvcc
@pytest.mark.slow
def test_matches_host_compiled_cuda_generator(cuda_dump):
    rd = _Reader(cuda_dump)
    assert np.array_equal(rd.take64(len(MIX_INPUTS)), S.mix64(np.array(MIX_INPUTS, np.uint64)))
    for seed, stream, index in RND_TRIPLES:
        assert int(rd.take64(1)[0]) == int(S.rnd(seed, stream, index)), (seed, stream, index)
    assert [tuple(int(x) for x in rd.take(4)) for _ in range(21)] == [tuple(k) for k in S.KIND_FORMATS]
    seen_modes, seen_kinds, seen_cc = set(), set(), set()
    for seed, kind, step, nb, nc, mn in CASES:
        kf, where = S.KIND_FORMATS[kind], f"seed={seed} kind={kind} step={step}"
        p = S.case_params(seed, kind)
        assert tuple(int(x) for x in rd.take(5)) == tuple(p), where
        seen_modes.add((p.mode, p.specials))
        seen_kinds.add(kind)
        seen_cc.add((kf.fc, p.cc))
        K = S.fill_k(kind)
        a, b = S.operand_bits(seed, kind, step, "A", 64), S.operand_bits(seed, kind, step, "B", nb)
        assert a.shape == (64, K) and b.shape == (nb, K)
        assert np.array_equal(rd.take(64 * K), a.ravel().astype(np.uint32)), where + " A"
        assert np.array_equal(rd.take(nb * K), b.ravel().astype(np.uint32)), where + " B"
        assert np.array_equal(rd.take(64 * 32), S.operand_smem(seed, kind, step, "A", 64, bool(mn))), where + " smem A"
        assert np.array_equal(rd.take(nb * 32), S.operand_smem(seed, kind, step, "B", nb, bool(mn))), where + " smem B"
        c = S.c_bits(seed, kind, nc)
        assert c.shape == (64, nc)
        nr = nc // 4 if kf.fc == 2 else nc // 2
        assert np.array_equal(rd.take(128 * nr).reshape(128, nr), _fragment_words(c, kf.fc)), where + " C"
        assert np.array_equal(rd.take(512).reshape(128, 4), S.a_register_bits(seed, kind, step)), where + " reg A"
    assert rd.pos == cuda_dump.size
    assert seen_kinds == set(range(21)) and seen_modes == {(m, s) for m in range(6) for s in (0, 1)}
    # case_params' clamp of the C centre is exercised at both ends (f32 and f16 accumulators)
    assert {(0, 1), (0, 254), (2, 1), (2, 30)} <= seen_cc


# ---------------------------------------------------------------- no compiler needed

def _mix64_ref(z):
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def _rnd_ref(seed, stream, index):
    return _mix64_ref((seed & M64) ^ _mix64_ref(((stream & M32) << 32) | (index & M32)))


def test_mix64_exact_values():
    assert int(S.mix64(np.uint64(0))) == _mix64_ref(0) == 0xE220A8397B1DCDAF  # splitmix64's first output, state 0
    z = np.array(MIX_INPUTS, np.uint64)
    out = S.mix64(z)
    assert out.dtype == np.uint64 and out.shape == z.shape
    assert [int(x) for x in out] == [_mix64_ref(v) for v in MIX_INPUTS]
    for seed, stream, index in RND_TRIPLES:
        assert int(S.rnd(seed, stream, index)) == _rnd_ref(seed, stream, index)
    assert S.rnd(5, 2, np.arange(6).reshape(2, 3)).shape == (2, 3)
    assert int(S.rnd(7, 1, 1 << 32)) == _rnd_ref(7, 1, 0)  # index is a uint32 in the kernel


# A scalar port of the C generator in Python ints (independent of numpy's integer semantics).
def _gen_float_ref(r, fmt, center, p):
    E, M, _, fn = S.FMTS[fmt]
    mnf = (1 << E) - 1 if fn else (1 << E) - 2
    if p.mode == 0:
        bits = r & ((1 << (1 + E + M)) - 1)
    elif p.specials and (r >> 60) == 0:
        bits = S.special_bits(fmt, (r >> 52) & 7, (r >> 51) & 1)
    elif p.mode >= 4 and ((r >> 58) & 3) == 0:
        bits = (r & 1) << (E + M)
    else:
        w = 1 if p.mode == 1 else 4 if p.mode in (2, 5) else 1 << E
        field = min(max(center + (r >> 24) % (2 * w + 1) - w, 0), mnf)
        bits = ((r & 1) << (E + M)) | (field << M) | ((r >> 1) & ((1 << M) - 1))
    if fmt == 1:
        bits = ((bits << 13) | ((r >> 32) & 0x1FFF)) & M32
    return bits


def _gen_int32_ref(r, mode):
    m = mode & 3
    if m == 0:
        return r & M32
    if m == 1:
        return (r % 65536 - 32768) & M32
    if m == 2:
        return 0x7FFFFFFF - r % 4096 if (r >> 40) & 1 else 0x80000000 + r % 4096
    return (r % (1 << 24) - (1 << 23)) & M32


def _elem_ref(r, fmt, center, p):
    return _gen_float_ref(r, fmt, center, p) if fmt <= 5 else r & 0xFF


def _case_params_ref(seed, fa, fb, fc):
    q = _rnd_ref(seed, 3, 0)
    ca = cb = cc = 0
    if fa <= 5:
        bias = [S.FMTS[f][2] for f in (fa, fb, fc)]
        mnf = [(1 << S.FMTS[f][0]) - (1 if S.FMTS[f][3] else 2) for f in (fa, fb, fc)]
        ca, cb = 1 + ((q >> 16) & 0xFF) % mnf[0], 1 + ((q >> 24) & 0xFF) % mnf[1]
        cc = min(max(ca - bias[0] + cb - bias[1] + (q >> 32) % 9 - 4 + bias[2], 1), mnf[2])
    return (q % 6, int(((q >> 8) & 3) == 0), ca, cb, cc)


def test_scalar_python_port():
    for seed, kind, step, _, _, _ in CASES:
        kf, p = S.KIND_FORMATS[kind], S.case_params(seed, kind)
        assert tuple(p) == _case_params_ref(seed, kf.fa, kf.fb, kf.fc)
        K = S.fill_k(kind)
        a = S.operand_bits(seed, kind, step, "A", 4).ravel()
        b = S.operand_bits(seed, kind, step, "B", 4).ravel()
        assert [int(x) for x in a] == [_elem_ref(_rnd_ref(seed, 16 * step, i), kf.fa, p.ca, p) for i in range(4 * K)]
        assert [int(x) for x in b] == [_elem_ref(_rnd_ref(seed, 16 * step + 1, i), kf.fb, p.cb, p)
                                       for i in range(4 * K)]
        n = 24
        c = S.c_bits(seed, kind, n)
        for row, col in ((0, 0), (5, 7), (63, 23), (40, 12)):
            r = _rnd_ref(seed, 2, row * n + col)
            ref = _gen_int32_ref(r, p.mode) if kf.fc == 8 else _gen_float_ref(r, kf.fc, p.cc, p)
            assert int(c[row, col]) == ref, (seed, kind, row, col)
        regs = S.a_register_bits(seed, kind, step)
        per = 1 if kf.bits == 1 else 32 // kf.bits
        for t in (0, 37, 127):
            for i in range(4):
                word = 0
                for e in range(per):
                    r = _rnd_ref(seed, 16 * step + 4, (t * 4 + i) * per + e)
                    if kf.bits == 1:
                        word |= r & M32
                    elif kf.bits == 32:
                        word |= _elem_ref(r, kf.fa, p.ca, p)
                    else:
                        word |= (_elem_ref(r, kf.fa, p.ca, p) & ((1 << kf.bits) - 1)) << (kf.bits * e)
                assert int(regs[t, i]) == word, (seed, kind, t, i)


def test_special_bits_values():
    f32, f16, bf16, e4m3, e5m2 = 0, 2, 3, 4, 5
    assert [S.special_bits(f16, s, 1) for s in range(8)] == [0, 0x8000, 0xFC00, 0xFE00, 0x8001, 0x83FF, 0xFBFF,
                                                             0x8400]
    assert [S.special_bits(e4m3, s, 0) for s in range(8)] == [0, 0x80, 0x7F, 0x7F, 0x01, 0x07, 0x7E, 0x08]
    assert [S.special_bits(e5m2, s, 0) for s in range(8)] == [0, 0x80, 0x7C, 0x7E, 0x01, 0x03, 0x7B, 0x04]
    assert S.special_bits(f32, 6, 1) == 0xFF7FFFFF and S.special_bits(bf16, 3, 0) == 0x7FC0
    assert S.special_bits(1, 2, 0) == 0x3FC00  # tf32 inf before the <<13 container shift


def test_kinds_match_scripts_module():
    sys.path.insert(0, CAPTURE)
    try:
        import gen_numerics_wrappers as gen
    finally:
        sys.path.remove(CAPTURE)
    assert S.NUMERICS_KINDS == gen.KINDS
    # fill_operand's template BITS per kind, and the instruction K of the wrappers
    for kind in range(len(S.NUMERICS_KINDS)):
        bits = 32 if kind == 0 else 16 if kind <= 3 else 1 if kind == 20 else 8
        assert S.KIND_FORMATS[kind].bits == bits
        assert S.instruction_k(kind) == gen.K_OF[gen.KINDS[kind][0]]


def test_tables_match_cuda_source():
    text = CU.read_text()
    kf = re.search(r"KF\[21\] = \{(.*?)\};", text, re.S).group(1)
    assert [tuple(map(int, m)) for m in re.findall(r"\{(\d+), (\d+), (\d+), (\d+)\}", kf)] == list(S.KIND_FORMATS)
    fm = re.search(r"FMTS\[6\] = \{(.*?)\};", text, re.S).group(1)
    assert tuple(tuple(map(int, m)) for m in re.findall(r"\{(\d+), (\d+), (\d+), (\d+)\}", fm)) == S.FMTS


def test_trace_was_captured_with_this_generator():
    if not TRACE.exists():
        pytest.skip(f"{TRACE} not present")
    with np.load(TRACE) as z:
        meta = json.loads(bytes(z["meta"]))
    assert [tuple(k) for k in meta["kinds"]] == S.NUMERICS_KINDS
    assert meta["sources"]["scripts/capture_numerics.cu"] == hashlib.sha256(CU.read_bytes()).hexdigest()


def test_shapes_and_dtypes():
    expect = {32: np.uint32, 16: np.uint16, 8: np.uint8, 1: np.uint8}
    for kind, kf in enumerate(S.KIND_FORMATS):
        a = S.operand_bits(9, kind, 1, "A", 64)
        assert a.dtype == expect[kf.bits] and a.shape == (64, 32 if kf.bits == 1 else S.instruction_k(kind))
        c = S.c_bits(9, kind, 24)
        assert c.shape == (64, 24) and c.dtype == (np.uint16 if kf.fc == 2 else np.uint32)
        r = S.a_register_bits(9, kind, 1)
        assert r.shape == (128, 4) and r.dtype == np.uint32
    assert S.case_params(9, 0) == S.case_params(9, ("tf32", "tf32", "f32", 0))
    for bad in (21, -1, True, ("f32", "f32", "f32", 0)):
        with pytest.raises(ValueError):
            S.case_params(9, bad)
    with pytest.raises(ValueError):
        S.operand_bits(9, 0, 0, "C", 8)


# Pinned from a run that matched the host-compiled CUDA generator (test above), so CI without nvcc still
# catches any drift in seeds.py.
GOLDEN = "f44f2c0bbae584a957b70a5e8c35870e"


def _golden_digest():
    h = hashlib.blake2b(digest_size=16)
    seeds = [0, 1, 2611, M64, 1 << 63] + [(i * 0x9E3779B97F4A7C15) & M64 for i in range(1, 59)]
    for i, seed in enumerate(seeds):
        kind, step, nb, nc = i % 21, i % 3, 24 if i % 2 else 64, 256 if i % 5 == 0 else 24
        h.update(np.array(S.case_params(seed, kind), np.int64).tobytes())
        for arr in (S.operand_bits(seed, kind, step, "A", 64), S.operand_bits(seed, kind, step, "B", nb),
                    S.c_bits(seed, kind, nc), S.a_register_bits(seed, kind, step),
                    S.operand_smem(seed, kind, step, "B", nb, S.KIND_FORMATS[kind].bits == 16 and i % 4 == 1)):
            h.update(np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes())
    return h.hexdigest()


def test_golden_digest():
    assert _golden_digest() == GOLDEN
