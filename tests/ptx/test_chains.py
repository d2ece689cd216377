"""Deferred wgmma accumulator chains (tcemu/ptx/chains.py): a warpgroup's wgmma steps into the same D registers wait
and are computed as one K loop by the GEMM engine when an instruction first touches the registers. The registers
then hold what the instructions one by one give: the hardware-verified model step by step (wgmma_kernel.prepare)
and the run with chains off (ops/wgmma_gang.DEFER = False)."""
import numpy as np
import pytest

from tcemu.ptx import chains
from tcemu.ptx.ops import wgmma_gang

from ptxkit import launch_matmul
from wgmma_kernel import BF16, E4M3, F16, TF32, Form, launch

WAIT = "  wgmma.commit_group.sync.aligned;\n  wgmma.wait_group.sync.aligned 0;\n"


@pytest.fixture
def settled(monkeypatch):
    """The steps of each chain computed: [number of steps, ...]."""
    seen = []
    real = chains._compute

    def spy(group):
        seen.extend(len(ch.a) for ch in group)
        return real(group)
    monkeypatch.setattr(chains, "_compute", spy)
    return seen


@pytest.mark.parametrize("form,steps", [(BF16, [4]), (F16, [2]), (E4M3, [2]), (TF32, [])],
                         ids=["bf16", "f16-acc", "e4m3", "tf32-scale-b-minus-1"])
def test_a_chain_gives_the_registers_of_the_steps_one_by_one(form, steps, settled):
    # the registers wait until the st.global that stores them reads them; imm-scale-b = -1 is computed at once
    regs, prep = launch(form)
    assert np.array_equal(regs, prep["regs"])
    assert settled == steps


def test_a_chain_grown_to_max_steps_is_computed_and_the_next_steps_start_from_it(monkeypatch, settled):
    # MAX_STEPS (64 in a real run: K 1024 of bf16) cut to 3: the fourth step finds the chain full, computes it and
    # starts a new one from the registers it left
    monkeypatch.setattr(wgmma_gang, "MAX_STEPS", 3)
    regs, prep = launch(BF16)
    assert np.array_equal(regs, prep["regs"])
    assert settled == [3, 1]


@pytest.mark.parametrize("form", [BF16, F16], ids=["bf16", "f16-acc"])
def test_reading_the_registers_mid_chain_computes_it_there_and_the_next_steps_start_from_them(form, settled):
    # after step 0 the kernel waits and reads D (an add of D[0] into a scratch register): the chain of one step is
    # computed there; the later steps (scale-d = 1) start a chain from the registers it left
    hooks = {"after_step0": WAIT + "  add.u32 %r30, %d0, 1;\n"}
    regs, prep = launch(form, hooks=hooks)
    assert np.array_equal(regs, prep["regs"])
    assert settled == [1, len(form.b_descs) - 1]


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast")   # prepare's int64 cross-check of 3e38
def test_a_chain_from_loaded_accumulators_keeps_their_specials():
    # C from memory (scale-d = 1 from the first step): -0, a subnormal, huge values whose sums overflow, tiny ones
    c0 = np.array([-0.0, 1e-40, 3e38, -3e38, 1.5e-7, 7.0, -2.5, 1e30], np.float32)
    form = Form(BF16.shape, "f32", "bf16", "bf16", BF16.a_descs, BF16.b_descs, init_c=True, seed=11,
                extra={"c0": np.resize(c0, (64, 32))})
    regs, prep = launch(form)
    assert np.array_equal(regs, prep["regs"])


def test_chains_off_gives_the_same_registers(monkeypatch):
    hooks = {"after_step1": WAIT + "  add.u32 %r30, %d3, 1;\n"}
    regs, prep = launch(BF16, hooks=hooks)
    monkeypatch.setattr(wgmma_gang, "DEFER", False)
    off, _ = launch(BF16, hooks=hooks)
    assert np.array_equal(regs, off) and np.array_equal(regs, prep["regs"])


@pytest.mark.parametrize("name,M,N,K", [("matmul_bf16", 256, 256, 256), ("matmul_e4m3", 256, 256, 256)])
def test_triton_matmuls_chain_their_k_loop(name, M, N, K, settled):
    _, _, c, _, _ = launch_matmul(name, M, N, K)
    # 2 CTAs x 2 warpgroups, each computing its whole K loop (K / 64 iterations of 4 k16 or 2 k32 wgmmas) at once
    per_step = 16 if name == "matmul_bf16" else 32
    assert settled == [K // per_step] * 4
    _, _, alone, _, _ = launch_matmul(name, M, N, K, lockstep=False)
    assert c.any() and np.array_equal(c, alone)


@pytest.fixture
def grouped(monkeypatch):
    """The chains of each GEMM the engine runs: [chains in it, ...]."""
    groups = []
    real = chains._compute

    def spy(group):
        groups.append(len(group))
        return real(group)
    monkeypatch.setattr(chains, "_compute", spy)
    return groups


@pytest.mark.parametrize("M,N,together", [(256, 256, [4]), (128, 512, [2, 2])])
def test_chains_that_read_the_same_b_settle_as_one_gemm_with_the_same_bits(grouped, M, N, together):
    # Triton's 8-warp tile (128 x 256): the two warpgroups of a CTA read the same B operands (rows 0-63 and 64-127 of
    # A), and so do the CTAs of one tile column (copies of the same global bytes): their chains run as one GEMM of
    # their A rows stacked (M 256: both CTAs, 256 rows; N 512: two columns, a GEMM of 128 rows each); warps one at a
    # time settle each chain alone; the outputs agree
    groups = grouped
    _, _, c, _, _ = launch_matmul("matmul_bf16", M, N, 256)
    assert groups == together
    groups.clear()
    _, _, alone, _, _ = launch_matmul("matmul_bf16", M, N, 256, lockstep=False)
    assert groups == [1] * 4 and c.any() and np.array_equal(c, alone)


def test_a_checksum_met_by_other_b_bits_settles_each_chain_alone(grouped, monkeypatch):
    # the checksum only proposes a group: bits that differ are computed alone (here every step's checksum is one)
    groups = grouped
    monkeypatch.setattr(chains, "_crc", lambda bits, memo: 0)
    _, _, c, _, _ = launch_matmul("matmul_bf16", 128, 512, 256)
    assert groups == [2, 1, 1]   # the first CTA's twins (the same arrays); the other CTA's chains, each alone
    _, _, alone, _, _ = launch_matmul("matmul_bf16", 128, 512, 256, lockstep=False)
    assert np.array_equal(c, alone)


def test_the_steps_into_one_accumulator_key_it_with_one_register_set_object(monkeypatch):
    # every wgmma instruction of the K loop writes the same D registers: its chain key (Warp.deferred) and in-flight
    # slot set (Warp.wgmma_pending) are the program's one object (Program.canonical), so a lookup matches by
    # identity instead of comparing 128 registers
    made = []
    real = wgmma_gang.GangMma.__init__

    def spy(self, *a, **k):
        real(self, *a, **k)
        made.append(self)
    monkeypatch.setattr(wgmma_gang.GangMma, "__init__", spy)
    regs, prep = launch(BF16)
    assert np.array_equal(regs, prep["regs"])
    assert len(made) == 4 and len({len(g.d_key) for g in made}) == 1
    assert all(g.d_key is made[0].d_key and g.slots is made[0].slots for g in made)
