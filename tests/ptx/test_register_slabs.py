"""Where warps' registers lie in a wave's register slab (machine.RegisterSlabs), and the private stretches that read
them as one slice (lockstep.Batch's view) instead of copying them."""
import json
import os
import sys

import numpy as np

import tcemu.ptx as ptx
from tcemu.ptx import lockstep, machine
from tcemu.traces import launches

FX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ptx")


def test_a_slab_by_warp_puts_warp_w_of_cta_s_in_column_w_ctas_plus_s():
    class Prog:
        nregs = {1: 1, 8: 1, 16: 1, 32: 2, 64: 1}
    slabs = machine.RegisterSlabs(3, by_warp=True)
    cols = [list(slabs.take(Prog, 4)[1]) for _ in range(3)]
    assert cols == [[0, 3, 6, 9], [1, 4, 7, 10], [2, 5, 8, 11]]
    assert list(slabs.take(Prog, 4)[1]) == [0, 3, 6, 9]   # a fourth CTA: a new slab
    plain = machine.RegisterSlabs(3)
    assert [list(plain.take(Prog, 4)[1]) for _ in range(2)] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_warp_specialised_is_told_by_setmaxnreg():
    mods = {k: ptx.load(open(os.path.join(FX, k + ".ptx")).read()) for k in ("cutlass_pingpong_bf16", "matmul_bf16")}
    assert {k: machine.warp_specialised(m.program(list(m.kernels)[0])) for k, m in mods.items()} == \
        {"cutlass_pingpong_bf16": True, "matmul_bf16": False}


def test_a_role_of_a_warp_specialised_wave_runs_its_stretches_on_the_slab_itself(monkeypatch):
    """CUTLASS ping-pong on 4 CTAs (one wave): every private stretch whose gang is some warp indices of all four CTAs
    (the producer warp, a consumer warpgroup, whole CTAs) reads its registers as one slice of the slab, in column
    order; laid out CTA by CTA, a role's gang was four slices, copied in and out at every stretch."""
    seen = []
    init = lockstep.Batch.__init__

    def spy(self, warps, touched, runs=None, copy=False):
        init(self, warps, touched, runs, copy)
        if sys._getframe(1).f_code.co_name == "stretch":   # (gang ops' batches keep gang order)
            seen.append((frozenset(w.index for w in warps), frozenset(w.cta.ctaid for w in warps), len(warps), self.view))
    monkeypatch.setattr(lockstep.Batch, "__init__", spy)
    order = lockstep._column_order
    reordered = []
    monkeypatch.setattr(lockstep, "_column_order", lambda g: reordered.append(order(g)) or reordered[-1])
    rec = json.load(open(os.path.join(FX, "bench_cutlass_pingpong_bf16_512.json")))["launch"]
    ctas = [(0, y, 0) for y in range(4)]
    out = launches.replay(rec, os.path.join(FX, "cutlass_pingpong_bf16.ptx"), seed=1, ctas=ctas).outputs["D"]
    whole = [(idx, v) for idx, c, n, v in seen if len(c) == 4 and n == 4 * len(idx)]
    roles = {idx for idx, _ in whole}
    assert {frozenset({0}), frozenset(range(4, 8)), frozenset(range(8, 12)), frozenset(range(12))} <= roles
    assert all(v for _, v in whole), sorted({tuple(sorted(i)) for i, v in whole if not v})
    assert any(r is not None for r in reordered)   # whole CTAs: taken in column order
    assert out.view(np.uint32).any()
