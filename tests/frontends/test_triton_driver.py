"""tcemu as Triton's driver (issue 25): ordinary `kernel[grid](...)` launches on CPU torch tensors and numpy
arrays, compiled by Triton for sm_90a / sm_100a and run on tcemu's PTX interpreter. Every result is compared
bit for bit with numpy, torch's own arithmetic, or tcemu.matmul."""
import os
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install 'tcemu[triton]')")
import triton.language as tl  # noqa: E402

import tcemu  # noqa: E402
import tcemu.triton as T  # noqa: E402
from tcemu.frontends import triton_driver  # noqa: E402
from tcemu.ptx import KernelFault  # noqa: E402

from paths import ROOT
from tritonkit import sm90  # noqa: E402,F401  (the fixture)
from tritonkit import torch_or_skip as _torch  # noqa: E402


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def scale_shift_kernel(x_ptr, prod_ptr, sum_ptr, a, b, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(prod_ptr + offs, x * a)
    tl.store(sum_ptr + offs, x + b)


def test_ordinary_launch_on_torch_tensors(sm90):
    torch = _torch()
    dev = triton.runtime.driver.active.get_active_torch_device()
    assert dev.type == "cpu"
    torch.manual_seed(0)
    x, y = torch.rand(3000, device=dev), torch.rand(3000, device=dev)
    out = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(3000, meta["BLOCK"]),)  # noqa: E731
    add_kernel[grid](x, y, out, 3000, BLOCK=1024)
    assert torch.equal(out, x + y)
    st = T.last_launch()
    assert (st["kernel"], st["arch"], st["grid"], st["block"]) == ("add_kernel", "sm90", (3, 1, 1), (128, 1, 1))
    assert st["ctas"] == 3 and st["warp_instructions"] > 0 and st["seconds"] > 0
    # a view's pointer is its first element; an output aliasing an input is one buffer, as on a GPU
    big = torch.zeros(3100)
    add_kernel[grid](x, y, big[7:], 3000, BLOCK=1024)
    assert torch.equal(big[7:3007], x + y) and not big[:7].any() and not big[3007:].any()
    x2 = x.clone()
    add_kernel[grid](x2, y, x2, 3000, BLOCK=1024)
    assert torch.equal(x2, x + y)
    triton.testing.assert_close(out, x + y, atol=0)
    with pytest.raises(AssertionError):
        triton.testing.assert_close(out + 1, x + y, atol=0)


def test_floats_round_as_a_launch_rounds_them(sm90):
    """A Python float for an f32 argument is rounded to nearest even (the C launcher's cast), not refused."""
    torch = _torch()
    x = torch.linspace(-3, 3, 256, dtype=torch.float32)
    prod, total = torch.empty_like(x), torch.empty_like(x)
    scale_shift_kernel[(1,)](x, prod, total, 0.1, 1e-5, BLOCK=256)
    assert np.array_equal(prod.numpy(), x.numpy() * np.float32(0.1))
    assert np.array_equal(total.numpy(), x.numpy() + np.float32(1e-5))
    assert float(np.float32(0.1)) != 0.1 and float(np.float32(1e-5)) != 1e-5


def test_run_compiled_rounds_floats_too():
    """The fixtures' path (compile_kernel + run_compiled) rounds a Python float for an f32 argument the same way."""
    sig, consts, div = T.specialize(scale_shift_kernel, {"x_ptr": "*fp32", "prod_ptr": "*fp32", "sum_ptr": "*fp32",
                                                         "a": 0.1, "b": 1e-5, "BLOCK": 128})
    ptx, _, meta = T.compile_kernel(scale_shift_kernel, signature=sig, constexprs=consts, num_warps=4, num_stages=1,
                                    divisibility=div)
    x = np.linspace(-3, 3, 128, dtype=np.float32)
    prod, total = np.empty_like(x), np.empty_like(x)
    T.run_compiled(ptx, meta, {"x_ptr": x, "prod_ptr": prod, "sum_ptr": total, "a": 0.1, "b": 1e-5}, grid=(1,))
    assert np.array_equal(prod, x * np.float32(0.1)) and np.array_equal(total, x + np.float32(1e-5))


def test_numpy_arrays_and_run(sm90):
    x = np.random.default_rng(1).random(2000, dtype=np.float32)
    y = np.random.default_rng(2).random(2000, dtype=np.float32)
    out = np.zeros_like(x)
    add_kernel[(2,)](x, y, out, 2000, BLOCK=1024)
    assert np.array_equal(out, x + y)
    out2 = np.zeros_like(x)
    st = T.run(add_kernel, (2,), x_ptr=x, y_ptr=y, out_ptr=out2, n=2000, BLOCK=1024)
    assert np.array_equal(out2, x + y) and st["kernel"] == "add_kernel"
    assert isinstance(triton.runtime.driver.active, triton_driver.Driver)   # run() left the active driver


@triton.jit
def gather_kernel(ptrs_ptr, out_ptr, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    src = tl.load(ptrs_ptr + i).to(tl.pointer_type(tl.float32))   # a host pointer the host wrote (grouped GEMM)
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + i * BLOCK + offs, tl.load(src + offs))


def test_pointers_written_by_the_host_are_valid(sm90):
    torch = _torch()
    a, b = torch.rand(64), torch.rand(80)
    ptrs = torch.tensor([b[16:].data_ptr(), a.data_ptr()], dtype=torch.int64)
    out = torch.empty(128)
    gather_kernel[(2,)](ptrs, out, BLOCK=64)
    assert torch.equal(out[:64], b[16:]) and torch.equal(out[64:], a)


@triton.jit
def desc_kernel(in_desc, out_desc, eps, BM: tl.constexpr, BN: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    x = in_desc.load([pm * BM, pn * BN])
    out_desc.store([pm * BM, pn * BN], (x.to(tl.float32) + eps).to(x.dtype))


@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn", "float32"])
def test_host_tensor_descriptors(sm90, dtype):
    torch = _torch()
    from triton.tools.tensor_descriptor import TensorDescriptor
    tdt, ndt = getattr(torch, dtype), np.dtype(getattr(ml_dtypes, dtype, dtype))
    src = (np.random.default_rng(3).standard_normal((64, 48)) * 4).astype(ndt)
    x = torch.from_numpy(src.view(np.uint8)).view(tdt).reshape(64, 48) if ndt.itemsize == 1 else \
        torch.from_numpy(src.view(np.int16 if ndt.itemsize == 2 else np.int32)).view(tdt)
    out = torch.zeros_like(x)
    eps = 1e-5   # refused before issue 25 as "not exactly representable"
    desc_kernel[(2, 3)](TensorDescriptor.from_tensor(x, [32, 16]), TensorDescriptor.from_tensor(out, [32, 16]), eps,
                        BM=32, BN=16)
    want = (src.astype(np.float32) + np.float32(eps)).astype(ndt)
    assert out.view(torch.uint8).numpy().tobytes() == want.tobytes()
    # numpy arrays (ml_dtypes) through tcemu.triton.TensorDescriptor and run(): the same bytes
    got = np.zeros_like(src)
    T.run(desc_kernel, (2, 3), in_desc=T.TensorDescriptor(src, [32, 16]), out_desc=T.TensorDescriptor(got, [32, 16]),
          eps=eps, BM=32, BN=16)
    assert got.tobytes() == want.tobytes()


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak)
        b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.float16))


def test_tensor_core_matmul_equals_tcemu_matmul(sm90):
    """A bf16 wgmma kernel launched the ordinary way, with B a transposed view (strides passed): every output bit
    equals tcemu.matmul's model of Triton's sm_90a matmul."""
    torch = _torch()
    rng = np.random.default_rng(4)
    a = rng.standard_normal((128, 128)).astype(ml_dtypes.bfloat16)
    bt = rng.standard_normal((64, 128)).astype(ml_dtypes.bfloat16)
    ta = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    tb = torch.from_numpy(bt.view(np.int16)).view(torch.bfloat16).T    # (128, 64), not contiguous
    c = torch.empty(128, 64, dtype=torch.float16)
    k = matmul_kernel[(2, 1)](ta, tb, c, 128, 64, 128, ta.stride(0), ta.stride(1), tb.stride(0), tb.stride(1),
                          c.stride(0), c.stride(1), BM=64, BN=64, BK=64)
    want = tcemu.matmul(a, np.ascontiguousarray(bt.T), dtype_a="bf16", dtype_b="bf16", out_dtype="f16")
    assert c.numpy().tobytes() == want.tobytes()
    assert "wgmma.mma_async" in k.asm["ptx"] and ".target sm_90a" in k.asm["ptx"]


@pytest.mark.slow
def test_tcgen05_matmul_on_sm100_equals_tcemu_matmul(sm90):
    """The same kernel launched for a B200 (activate("sm100")): Triton emits tcgen05.mma; every output bit equals
    tcemu.matmul's sm100 model."""
    torch = _torch()
    rng = np.random.default_rng(5)
    a = rng.standard_normal((128, 128)).astype(ml_dtypes.bfloat16)
    bt = rng.standard_normal((128, 128)).astype(ml_dtypes.bfloat16)
    ta = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    tb = torch.from_numpy(bt.view(np.int16)).view(torch.bfloat16).T
    c = torch.empty(128, 128, dtype=torch.float16)
    T.activate("sm100")
    try:
        k = matmul_kernel[(1, 1)](ta, tb, c, 128, 128, 128, ta.stride(0), ta.stride(1), tb.stride(0), tb.stride(1),
                                  c.stride(0), c.stride(1), BM=128, BN=128, BK=64)
        assert T.last_launch()["arch"] == "sm100"
    finally:
        T.activate("sm90")
    assert "tcgen05.mma" in k.asm["ptx"] and ".target sm_100a" in k.asm["ptx"]
    want = tcemu.matmul(a, np.ascontiguousarray(bt.T), arch="sm100", dtype_a="bf16", dtype_b="bf16", out_dtype="f16")
    assert c.numpy().tobytes() == want.tobytes()


@triton.jit
def count_kernel(x_ptr, out_ptr, count_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)
    if tl.program_id(0) == 0:
        tl.atomic_add(count_ptr, 1)


tuned = triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4), triton.Config({"BLOCK": 256},
                                                                                          num_warps=2)],
                        key=["n"])(count_kernel)


def test_autotune_runs_each_config_once_and_do_bench(sm90):
    torch = _torch()
    x = torch.arange(512, dtype=torch.float32)
    out, count = torch.empty_like(x), torch.zeros(1, dtype=torch.int32)
    tuned[lambda meta: (triton.cdiv(512, meta["BLOCK"]),)](x, out, count, 512)
    assert torch.equal(out, x * 2) and int(count) == 3   # 2 configs benchmarked once each, then the launch
    assert tuned.best_config.kwargs["BLOCK"] in (128, 256)
    count.zero_()
    ms = triton.testing.do_bench(lambda: count_kernel[(1,)](x, out, count, 512, BLOCK=512))
    assert isinstance(ms, float) and ms > 0 and int(count) >= 8   # CPU wall time over >= 8 launches


@triton.jit
def fault_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1)   # no mask: program 1 runs past the end of x


def test_fault_names_the_source_line_and_keeps_what_was_written(sm90):
    torch = _torch()
    x, out = torch.arange(200, dtype=torch.float32), torch.zeros(256)
    with pytest.raises(KernelFault) as e:
        fault_kernel[(2,)](x, out, BLOCK=128)
    msg = str(e.value)
    assert "test_triton_driver.py" in msg and "tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1)" in msg
    assert "x_ptr" in msg   # the allocation is named after the argument
    assert not out.any()   # in lock-step both programs load first: program 1's load faults before any store
    T.activate("sm90", lockstep=False)   # warps one at a time: program 0 stores before program 1 faults
    try:
        with pytest.raises(KernelFault):
            fault_kernel[(2,)](x, out, BLOCK=128)
    finally:
        T.activate("sm90")
    assert torch.equal(out[:128], x[:128] + 1)
    assert not out[200:].any()


@triton.jit
def spin_kernel(flag_ptr):
    i = 0
    while tl.load(flag_ptr, volatile=True) == 0:   # nothing sets it: spins for ever; counting, its state never
        i += 1                                     # repeats (a plain spin is a Deadlock at once: test_triton_resident)
    tl.store(flag_ptr + 1, i)


def test_launch_timeout(sm90):
    torch = _torch()
    T.activate("sm90", timeout=2)
    try:
        with pytest.raises(tcemu.ptx.BudgetExceeded, match="time limit of 2 s"):
            spin_kernel[(1,)](torch.zeros(2, dtype=torch.int32))
        with pytest.raises(T.TritonError, match="launch: unknown options \\['grid'\\]"):
            T.activate("sm90", grid=(2,))
    finally:
        T.activate("sm90")


def test_wrong_tensors_are_refused(sm90):
    torch = _torch()
    x = torch.empty(128, device="meta")
    with pytest.raises(T.TritonError, match="x_ptr: is a tensor on meta; tcemu's driver runs kernels on CPU"):
        add_kernel[(1,)](x, torch.zeros(128), torch.zeros(128), 128, BLOCK=128)
    class Handle:   # what Triton's specialisation accepts as a tensor, but no host memory
        dtype = torch.float32

        def data_ptr(self):
            return 1 << 40
    with pytest.raises(T.TritonError, match="y_ptr: a pointer argument takes a CPU torch tensor, a numpy array"):
        add_kernel[(1,)](torch.zeros(128), Handle(), torch.zeros(128), 128, BLOCK=128)


def test_env_switch(monkeypatch):
    monkeypatch.setenv("TCEMU_TRITON", "sm80")
    with pytest.raises(T.TritonError, match="TCEMU_TRITON: 'sm80': sm90 or sm100"):
        triton_driver.env_arch()
    monkeypatch.setenv("TCEMU_TRITON", "sm100")
    assert triton_driver.env_arch() == "sm100"
    monkeypatch.delenv("TCEMU_TRITON")
    assert triton_driver.env_arch() is None


def test_entry_point_modules_hold_one_backend_each():
    from triton.backends import _find_concrete_subclasses
    from triton.backends.compiler import BaseBackend
    from triton.backends.driver import DriverBase
    import tcemu_triton.compiler
    import tcemu_triton.driver
    comp = _find_concrete_subclasses(tcemu_triton.compiler, BaseBackend)
    drv = _find_concrete_subclasses(tcemu_triton.driver, DriverBase)
    assert comp.__name__ == "TcemuCompiler" and not comp.supports_target(None)
    assert drv.__name__ == "TcemuDriver"


SCRIPT = '''
import torch, triton, triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

try:
    dev = triton.runtime.driver.active.get_active_torch_device()
except RuntimeError as e:
    print("triton:", e)
    raise SystemExit(0)
x = torch.rand(300, device=dev); y = torch.rand(300, device=dev); out = torch.empty_like(x)
add_kernel[(1,)](x, y, out, 300, BLOCK=512)
import tcemu.triton
print(torch.equal(out, x + y), tcemu.triton.last_launch()["arch"], torch.cuda.get_device_capability())
'''


def test_switched_on_by_the_environment(tmp_path):
    """A fresh process: without TCEMU_TRITON (and without a GPU) Triton's own error stands; with it, the entry
    point makes tcemu the driver (an entry point for this checkout, as `pip install tcemu` registers it)."""
    _torch()
    info = tmp_path / "tcemu_entry-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tcemu-entry\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[triton.backends]\ntcemu = tcemu_triton\n")
    (tmp_path / "script.py").write_text(textwrap.dedent(SCRIPT))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]), TRITON_DEFAULT_FP_FUSION="1")
    env.pop("TCEMU_TRITON", None)
    if not _has_gpu():
        off = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=300)
        assert off.stdout.strip() == "triton: 0 active drivers ([]). There should only be one.", off.stderr[-2000:]
    on = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, env=dict(env, TCEMU_TRITON="sm100"),
                        capture_output=True, text=True, timeout=300)
    assert on.stdout.strip() == "True sm100 (10, 0)", on.stderr[-2000:]


def _has_gpu():
    return os.path.exists("/dev/nvidia0")
