"""wgmma.mma_async's gang version (tcemu/ptx/ops/wgmma_gang.py): a lock-step gang's complete warpgroups run as one
batch with the bits of warps one at a time (lockstep=False), the batched arithmetic equals one call per product bit
for bit, and a kernel bug in a gang falls back to the warps' own runs, which report it with the same text."""
import numpy as np
import pytest

import tcemu.ptx as tp
from tcemu.arith.fdp import decode_operand, fused_dot
from tcemu.hopper.wgmma import fdp_unit, wgmma_batch
from tcemu.layout.fragments import from_d_registers, from_d_registers_batch, to_d_registers, to_d_registers_batch
from tcemu.ptx.ops import wgmma_gang
from tcemu.ptx.signals import Fallback

from ptxkit import launch_matmul
from wgmma_kernel import AREG, BASE, BF16, D, E4M3, F16, S8, TF32, Form, launch


@pytest.fixture
def gangs(monkeypatch):
    """Record each gang step of wgmma.mma_async: ('ran', warps) or ('fallback', warps)."""
    seen = []
    real = wgmma_gang.GangMma.__call__

    def spy(self, pairs):
        try:
            real(self, pairs)
        except Fallback:
            seen.append(("fallback", len(pairs)))
            raise
        seen.append(("ran", len(pairs)))
    monkeypatch.setattr(wgmma_gang.GangMma, "__call__", spy)
    return seen


def no_gang(monkeypatch):
    def refuse(self, pairs):
        raise Fallback
    monkeypatch.setattr(wgmma_gang.GangMma, "__call__", refuse)


# ------------------------------------------------------------------------------------------------ arithmetic

_FMT = {"bf16": (16, 8, 7, 0), "f16": (16, 5, 10, 0), "tf32": (32, 8, 10, 13), "e4m3": (8, 4, 3, 0),
        "f32": (32, 8, 23, 0)}   # container bits, exponent bits, mantissa bits, unread low bits


def _operand_bits(rng, shape, fmt):
    """Random bit patterns: mostly normals near 1 (exponents within +-4 of the bias), 10% subnormals, and rarely
    NaN, +-inf and -0 (e4m3: 0x7f is its NaN; it has no inf)."""
    bits, eb, mb, low = _FMT[fmt]
    bias = (1 << (eb - 1)) - 1
    man = rng.integers(0, 1 << mb, shape, dtype=np.int64) << low
    exp = rng.integers(bias - 4, bias + 5, shape)
    pick = rng.random(shape)
    exp[pick < 0.10] = 0                                       # subnormals (and some zeros)
    raw = (rng.integers(0, 2, shape) << (bits - 1)) | (exp << (mb + low)) | man
    top = ((1 << eb) - 1) << (mb + low)
    raw[pick > 0.997] = top | (1 << (mb + low - 1))            # NaN
    raw[(pick > 0.994) & (pick <= 0.997)] = top if fmt != "e4m3" else 0   # +inf
    raw[(pick > 0.990) & (pick <= 0.994)] = 1 << (bits - 1)    # -0
    return raw.astype({8: np.uint8, 16: np.uint16, 32: np.uint32}[bits])


@pytest.mark.parametrize("dtype_a,dtype_d,k", [("bf16", "f32", 16), ("f16", "f16", 16), ("tf32", "f32", 8),
                                               ("e4m3", "f32", 32)])
def test_batched_wgmma_arithmetic_equals_one_call_per_product(dtype_a, dtype_d, k):
    rng = np.random.default_rng(11)
    G, n = 5, 24
    a = _operand_bits(rng, (3, 64, k), dtype_a)
    b = _operand_bits(rng, (2, n, k), dtype_a)
    c = _operand_bits(rng, (G, 64, n), dtype_d)
    a_of, b_of = [0, 2, 1, 0, 2], [1, 0, 0, 1, 1]
    c_used = np.array([True, False, True, True, False])
    for scale_a, scale_b in ((1, 1), (-1, 1)):
        d = wgmma_batch(a, b, c, dtype_a=dtype_a, dtype_b=dtype_a, dtype_d=dtype_d, scale_a=scale_a, scale_b=scale_b,
                        a_of=a_of, b_of=b_of, c_used=c_used)
        unit = fdp_unit(dtype_a, dtype_d)
        for g in range(G):
            want = fused_dot(decode_operand(a[a_of[g]], dtype_a, negate=scale_a == -1),
                             decode_operand(b[b_of[g]], dtype_a, negate=scale_b == -1),
                             decode_operand(c[g], dtype_d) if c_used[g] else None, unit)
            assert np.array_equal(d[g], want), (g, scale_a)
    # the results reach the special paths and the plain one
    f = d.view(np.float16 if dtype_d == "f16" else np.float32)
    assert np.isnan(f).any() and np.isfinite(f).mean() > 0.5
    none = wgmma_batch(a, b, None, dtype_a=dtype_a, dtype_b=dtype_a, dtype_d=dtype_d, scale_a=-1, a_of=a_of,
                       b_of=b_of)
    assert np.array_equal(none[1], d[1]) and np.array_equal(none[4], d[4])   # scale-d = 0 is the absent C


@pytest.mark.parametrize("dtype_d,n", [("f32", 24), ("f16", 32), ("f32", 256)])
def test_fragment_batches_equal_one_conversion_each(dtype_d, n):
    rng = np.random.default_rng(12)
    nr = n // 4 if dtype_d == "f16" else n // 2
    regs = rng.integers(0, 1 << 32, (3, 128, nr), dtype=np.uint64).astype(np.uint32)
    d = from_d_registers_batch(regs, n, dtype_d)
    for g in range(3):
        assert np.array_equal(d[g], from_d_registers(regs[g], n, dtype_d))
    back = to_d_registers_batch(d, dtype_d)
    assert np.array_equal(back, regs)
    assert np.array_equal(back[1], to_d_registers(d[1], dtype_d))


# ------------------------------------------------------------------------------------------------ kernels

@pytest.mark.parametrize("name,M,N,K", [("matmul_bf16", 256, 256, 64), ("matmul_e4m3", 256, 256, 128),
                                         ("matmul_tf32", 256, 128, 32)])
def test_triton_matmul_gangs_give_the_bits_of_warps_one_at_a_time(name, M, N, K, gangs):
    _, _, c, _, _ = launch_matmul(name, M, N, K)
    ran = [w for how, w in gangs if how == "ran"]
    # 2 CTAs x 2 warpgroups: every gang step holds all 16 warps, none falls back
    assert ran and set(ran) == {16} and all(how == "ran" for how, _ in gangs)
    gangs.clear()
    _, _, alone, _, _ = launch_matmul(name, M, N, K, lockstep=False)
    assert not gangs and c.any() and np.array_equal(c, alone)


@pytest.mark.parametrize("form", [BF16, F16, TF32, E4M3], ids=["bf16", "f16", "tf32", "e4m3"])
def test_hand_written_forms_run_as_one_gang_step(form, gangs):
    regs, prep = launch(form)
    assert np.array_equal(regs, prep["regs"])
    assert gangs == [("ran", 4)] * len(form.b_descs)


# e4m3 A in registers: four elements a register, stepped into the chain in shared memory's byte container
AREG8 = Form("m64n16k32", "f32", "e4m3", "e4m3", [None, None],
             [D(BASE + 0x1000 + 0x200 * s, 128, 256, "none") for s in range(2)], seed=7)


@pytest.mark.parametrize("form", [AREG, AREG8], ids=["bf16", "e4m3"])
def test_register_a_forms_run_as_gangs_with_the_bits_of_the_ptx_text(form, monkeypatch):
    ran = []
    real = wgmma_gang.GangMma.run

    def run(self, groups):
        real(self, groups)
        ran.append(len(groups))
    monkeypatch.setattr(wgmma_gang.GangMma, "run", run)
    regs, prep = launch(form)
    assert np.array_equal(regs, prep["regs"])
    # each instruction ran through the batch path once (as a gang step, or for the warpgroup's last warp to arrive)
    assert ran == [1] * len(form.b_descs)
    no_gang(monkeypatch)
    monkeypatch.setattr(wgmma_gang.GangMma, "run", lambda self, groups: (_ for _ in ()).throw(Fallback))
    alone, _ = launch(form)
    assert np.array_equal(alone, regs)


def test_integer_forms_run_warp_by_warp(gangs):
    # s32 accumulators have no gang version: the warps run one at a time
    regs, prep = launch(S8)
    assert np.array_equal(regs, prep["regs"]) and gangs == []


def sub(old, new, count=1):
    return lambda text: text.replace(old, new, count)


PLANTED_WGMMA = {   # (run, a phrase of the report)
    "missing fence.proxy.async": (lambda: launch(BF16, hooks={"fence_proxy": ""}), "no fence.proxy.async"),
    "descriptor differs": (lambda: launch(BF16, hooks={"desc": "  setp.eq.u32 %p5, %r0, 69;\n"
                                                                      "  @%p5 add.s64 %rd11, %rd11, 1;\n"}),
                           "B's descriptor differs between the threads"),
    "register written after the fence": (lambda: launch(BF16, hooks={"after_fence": "  mov.b32 %d5, 0;\n"}),
                                         "since its last wgmma.fence"),
    "triton wrong swizzle": (lambda: launch_matmul("matmul_bf16", 128, 256, 64, sub("4611686293305294848",
                                                                                    "9223372311732682752", 8)),
                             "is not a tile of the array"),
    "triton missing proxy fence": (lambda: launch_matmul("matmul_bf16", 128, 256, 64,
                                                         sub("fence.proxy.async.shared::cta;", "")),
                                   "no fence.proxy.async"),
    "triton TMA consumer skips the wait": (lambda: launch_matmul(
        "matmul_tma_bf16", 128, 256, 64, sub("mbarrier.try_wait.parity.shared::cta.b64 complete, [%r54], %r184;",
                                             "setp.eq.u32 complete, 0, 0;")), "has not observed that phase"),
}


@pytest.mark.parametrize("bug", sorted(PLANTED_WGMMA))
def test_a_planted_bug_falls_back_and_reads_as_without_the_gang(bug, gangs, monkeypatch):
    run, phrase = PLANTED_WGMMA[bug]
    with pytest.raises(tp.KernelFault) as e:
        run()
    assert phrase in str(e.value)
    assert any(how == "fallback" for how, _ in gangs)    # the gang saw it first and stood back
    no_gang(monkeypatch)
    with pytest.raises(tp.KernelFault) as plain:
        run()
    assert type(plain.value) is type(e.value) and str(plain.value) == str(e.value)


def test_an_operand_with_unwritten_bytes_falls_back_every_time(gangs, monkeypatch):
    # the copy loop stops 64 words short: B's last rows were never written. The gang remembers operands it found
    # written whole (written bytes stay written); this one it must refuse at every step, and the warps report it
    import wgmma_kernel
    full = wgmma_kernel.kernel
    monkeypatch.setattr(wgmma_kernel, "kernel", lambda form, words, hooks=None: full(form, words - 64, hooks))
    with pytest.raises(tp.KernelFault, match="which was never written") as e:
        launch(BF16)
    assert any(how == "fallback" for how, _ in gangs)
    no_gang(monkeypatch)
    with pytest.raises(tp.KernelFault) as plain:
        launch(BF16)
    assert type(plain.value) is type(e.value) and str(plain.value) == str(e.value)


def test_the_correct_controls_run_as_gangs(gangs):
    # the Triton kernels of the planted bugs, unedited: every gang step runs (no false alarm, no fallback)
    for name in ("matmul_bf16", "matmul_tma_bf16"):
        gangs.clear()
        launch_matmul(name, 128, 256, 64)
        assert gangs and all(g == ("ran", 8) for g in gangs), name


def test_warps_of_a_warpgroup_that_reach_a_wgmma_apart_complete_it_together(monkeypatch):
    """Warp 0 takes a detour after the fence, so the warpgroup's warps reach the wgmmas apart: a gang of part of a
    warpgroup stands back and its warps wait at the collective, and a later step completes a warpgroup one of whose
    warps already waits there (wgmma_gang.GangMma.run with that warp in the collective's arrived set; CUTLASS's
    ping-pong consumers did this before warps ganged up at every turn); the bits stay the chain's."""
    runs = []
    real = wgmma_gang.GangMma.run

    def spy(self, groups):
        runs.extend(sorted((cta.collectives.get((wg, self.key)) or [set()])[0]) for cta, wg, _ in groups)
        return real(self, groups)
    monkeypatch.setattr(wgmma_gang.GangMma, "run", spy)
    detour = ("  mov.u32 %r5, %tid.x;\n  setp.ge.u32 %p5, %r5, 32;\n  @%p5 bra AHEAD;\n"
              "  add.u32 %r5, %r5, 1;\n  add.u32 %r5, %r5, 1;\nAHEAD:\n")
    regs, prep = launch(BF16, hooks={"after_fence": detour})
    assert np.array_equal(regs, prep["regs"])
    assert [0] in runs and all(r in ([], [0]) for r in runs)   # warps 1-3 completing what warp 0 waits in
