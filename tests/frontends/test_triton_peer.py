"""Forms that Triton's own unit tests (test_core.py, scripts/checks/triton_test_core.py) found missing in tcemu, each
launched as a user launches it: `kernel[grid](...)` on CPU torch tensors with tcemu's driver active."""

import numpy as np
import pytest

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install 'tcemu[triton]')")
import triton.language as tl  # noqa: E402


pytestmark = pytest.mark.needs_triton
from tritonkit import sm90  # noqa: E402,F401  (the fixture)
from tritonkit import torch_or_skip as _torch  # noqa: E402


@triton.jit
def _reduce_max(x_ptr, z_ptr, BLOCK: tl.constexpr):
    tl.store(z_ptr, tl.max(tl.load(x_ptr + tl.arange(0, BLOCK)), axis=0))


def test_uint16_max_reduction_runs_max_u16x2(sm90):
    """test_core.py's test_reduce1d[1-max-uint16-512]: Triton reduces two uint16 lanes at once with max.u16x2
    (PTX 9.7.1.10), which tcemu refused as a syntax error ("max.u16x2 needs a type")."""
    torch = _torch()
    rng = np.random.default_rng(25)
    x = torch.from_numpy(rng.integers(0, 1 << 16, 512, dtype=np.uint16))
    z = torch.zeros(1, dtype=torch.uint16)
    h = _reduce_max[(1,)](x, z, BLOCK=512)
    assert "max.u16x2" in h.asm["ptx"]
    assert int(z[0]) == int(x.numpy().max())
    # the halves compare unsigned: a signed compare (max.s16x2) would keep 0x7FFF over 0x8000 (-32768)
    y = torch.from_numpy(np.array([0x7FFF] * 511 + [0x8000], np.uint16))
    _reduce_max[(1,)](y, z, BLOCK=512)
    assert int(z[0]) == 0x8000
