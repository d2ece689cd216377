"""Hostile-input campaign (tests/support/campaign.py: the rule, the harness, the shared values) over the entry
points of instruction descriptors, tcgen05_mma (dense, tensor-memory operands, .sp, .ws, sm_103a), tensor memory,
the zero-column mask."""
import numpy as np
import pytest
from hypothesis import strategies as st

import tcemu
from tcemu.blackwell.collector import CollectorBuffers
from tcemu.blackwell.instr import InstrDescriptor, ZeroColumnMask
from tcemu.blackwell.tmem import TensorMemory

from campaign import (Arr, Const, D100, DESC100, FULL100, Flag, HUGE, IDESC, Int, Name, Opt, Param, RNG, TMEM,
                      campaign_limits, Registry)  # noqa: F401 (campaign_limits: a fixture)

pytestmark = pytest.mark.usefixtures("campaign_limits")
ENTRIES = Registry()
entry = ENTRIES.entry

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
      arch=Name(["sm103"], bad=["sm100", "sm90"]), enable_input_d=Flag(), weight=1.2, slow=True)
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


test_entry_point = ENTRIES.test()
