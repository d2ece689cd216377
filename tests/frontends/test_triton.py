"""tcemu.triton's own rules, without Triton's compiler: the JIT's specialisation (divisibility, constexpr
integers equal to 1, integer widths) and the launch-grid rule; without Triton installed, compile_kernel refuses by
name (Triton is imported only inside it). Whole compiled kernels: tests/ptx/test_triton_kernels.py."""
import subprocess
import sys
from types import SimpleNamespace

import pytest

from tcemu.core.errors import TcemuError
from tcemu.frontends import triton as TT

from paths import ROOT


def _fake_fn(names, const=()):
    return SimpleNamespace(__name__="k", arg_names=list(names),
                           params=[SimpleNamespace(name=n, is_constexpr=n in const) for n in names])



def test_specialize_follows_the_jit_rules():
    fn = _fake_fn(["p", "one", "n16", "n200", "big", "x", "BLOCK"], const=("BLOCK",))
    sig, const, div = TT.specialize(fn, {"p": "*bf16", "one": 1, "n16": 512, "n200": 200, "big": 2**33, "x": 0.5,
                                         "BLOCK": 64})
    assert sig == {"p": "*bf16", "one": "constexpr", "n16": "i32", "n200": "i32", "big": "i64", "x": "fp32",
                   "BLOCK": "constexpr"}
    assert const == {"one": 1, "BLOCK": 64}
    assert div == ["p", "n16", "big"]
    with pytest.raises(TcemuError, match="missing"):
        TT.specialize(fn, {"p": "*bf16"})
    rule = [[["M", "BM"], ["N", "BN"]], [], [2]]
    assert TT.launch_grid(rule, {"M": 300, "N": 257}, {"BM": 128, "BN": 256}) == (6, 1, 2)   # 3 * 2, 1, 2



def test_tcemu_triton_without_triton():
    code = ("import sys; sys.modules['triton'] = None\n"
            "import types, tcemu.triton as T\n"
            "fn = types.SimpleNamespace(__name__='k', arg_names=[], params=[])\n"
            "try:\n    T.compile_kernel(fn, signature={}, constexprs={}, num_warps=4, num_stages=1)\n"
            "except T.TritonError as e:\n    print('refused:', e.field)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60,
                         env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "refused: triton"   # imported only inside compile_kernel
