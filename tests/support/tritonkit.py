"""What the tests of ordinary Triton launches on tcemu's driver share: CPU torch (skipped without it) and the
driver switched on for one test module. Import it after `pytest.importorskip("triton")`."""
import os

import pytest

import tcemu.triton as T

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")   # Triton 3.9's default, without its warning


def torch_or_skip():
    return pytest.importorskip("torch", reason="torch is not installed: the ordinary-launch tests need CPU torch "
                                               "tensors (pip install torch)")


@pytest.fixture(scope="module")
def sm90():
    """tcemu's driver active for the tests of this module, switched off again after them."""
    drv = T.activate("sm90")
    yield drv
    T.deactivate()
