"""launch(symbols={name: address}): a module's .global / .const variables at a program's own device addresses
(tcemu exec's __device__ / __constant__ variables), instead of tcemu's placement (module._place_globals)."""
import numpy as np
import pytest

import tcemu.ptx as ptx
from tcemu.ptx.errors import PtxError

TEXT = """.version 8.0
.target sm_90a
.address_size 64
.global .align 4 .u32 counter = 5;
.const .align 4 .b8 coef[8] = {1, 0, 0, 0, 2, 0, 0, 0};
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd1, %rd1, %rd2;
  ld.const.u32 %r2, [coef+4];
  atom.global.add.u32 %r3, [counter], %r2;
  st.global.u32 [%rd1], %r2;
  ret;
}
"""
OUT, VARS = 0x10000, 0x20000   # the program's addresses: out, then counter (4 bytes) and coef (8 bytes)


def _launch(mod, symbols, vars_bytes):
    out = np.zeros(32, np.uint32)
    mod.launch("k", grid=1, block=32, param_bytes=OUT.to_bytes(8, "little"),
               buffers=[(OUT, out, "out"), (VARS, vars_bytes, "vars")], symbols=symbols)
    return out


def test_symbols_map_variables_at_the_programs_addresses():
    mod = ptx.load(TEXT)
    mem = np.zeros(12, np.uint8)
    mem[:4] = np.frombuffer(np.uint32(100).tobytes(), np.uint8)       # the host's counter
    mem[4:] = np.frombuffer(np.array([7, 9], np.uint32).tobytes(), np.uint8)   # the host's coef
    out = _launch(mod, {"counter": VARS, "coef": (VARS + 4, 8)}, mem)
    assert out.tolist() == [9] * 32                                 # coef[1] as the host wrote it
    assert mem[:4].view(np.uint32)[0] == 100 + 32 * 9               # the counter, in place
    out = _launch(mod, {"counter": VARS, "coef": (VARS + 4, 8)}, mem)   # persists to the next launch
    assert mem[:4].view(np.uint32)[0] == 100 + 64 * 9
    # the control: without symbols, tcemu's own placement and the module's initialisers
    mem2 = mem.copy()
    assert _launch(mod, None, mem2).tolist() == [2] * 32 and np.array_equal(mem2, mem)


def test_bad_symbols_are_named():
    mod = ptx.load(TEXT)
    mem = np.zeros(12, np.uint8)
    with pytest.raises(PtxError, match=r"symbols: 'nope' is not a .global or .const variable of this module "
                                       r"\(it declares: counter, coef\)"):
        _launch(mod, {"nope": VARS}, mem)
    with pytest.raises(PtxError, match=r"symbols: coef: 4 bytes given, but the module declares .const coef with 8 "
                                       r"bytes"):
        _launch(mod, {"coef": (VARS + 4, 4)}, mem)
    with pytest.raises(PtxError, match=r"symbols: coef at 0x20008: its 8 bytes do not lie inside one mapped buffer "
                                       r"\(8 bytes into 'vars' \(12 bytes\)\)"):
        _launch(mod, {"coef": VARS + 8}, mem)
    with pytest.raises(PtxError, match=r"symbols: must be a dict"):
        _launch(mod, [("coef", VARS)], mem)


def test_initial_bytes_are_the_initialiser():
    mod = ptx.load(TEXT)
    assert mod.initial_bytes("coef").tolist() == [1, 0, 0, 0, 2, 0, 0, 0]
    assert mod.initial_bytes("counter").view(np.uint32).tolist() == [5]
    with pytest.raises(PtxError, match=r"variable: 'k' is not a .global or .const variable of this module"):
        mod.initial_bytes("k")
