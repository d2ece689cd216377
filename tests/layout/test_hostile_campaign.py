"""Hostile-input campaign (tests/support/campaign.py: the rule, the harness, the shared values) over the entry
points of descriptors and addressing, shared memory, fragments (registers), banks, TMA; and the memory-safety
reproducers of issue 17 run in subprocesses (test_crash_isolation)."""
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import strategies as st

import tcemu
from tcemu.layout import banks, fragments, tma
from tcemu.layout.descriptors import SwizzleMode, UmmaDescriptor
from tcemu.layout.smem import SharedMemory

from campaign import (ARCH, Arr, Const, DESC100, DESC90, DTYPE90, FULL90, Flag, HUGE, Int, KS, MAJOR, NAN, Name, Opt,
                      Param, RNG, ROWS, SMEM_ADDR, SWIZZLE_NAME, TALLY, _fresh, _has_error_finding, campaign_limits,
                      Registry)  # noqa: F401 (campaign_limits: a fixture)
from paths import ROOT

pytestmark = pytest.mark.usefixtures("campaign_limits")
ENTRIES = Registry()
entry = ENTRIES.entry

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
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    outcome = "clean error" if proc.returncode == 3 else \
        "crash" if proc.returncode < 0 else "other exception" if proc.returncode else "silently accepted"
    TALLY[("subprocess " + name, outcome)] += 1
    assert outcome == "clean error", f"{name}: rc {proc.returncode}, {proc.stdout[-300:]} {proc.stderr[-600:]}"


test_entry_point = ENTRIES.test()
