"""Issue 23: Triton kernels whose CTAs wait on each other complete (tcemu starts the CTAs not yet running once the
running ones are proven to spin), and a Triton spin nobody satisfies is a Deadlock at once."""
import numpy as np
import pytest

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install 'tcemu[triton]')")
import triton.language as tl  # noqa: E402

import tcemu.ptx  # noqa: E402
import tcemu.triton as tt  # noqa: E402

pytestmark = pytest.mark.needs_triton


@triton.jit
def grid_barrier_kernel(cnt_ptr, out_ptr, n):
    pid = tl.program_id(0)
    tl.atomic_add(cnt_ptr, 1)
    while tl.atomic_add(cnt_ptr, 0) < n:   # every program waits for all n: they must run at once
        pass
    tl.store(out_ptr + pid, tl.load(cnt_ptr) + pid)


@triton.jit
def volatile_barrier_kernel(cnt_ptr, out_ptr, n):
    pid = tl.program_id(0)
    tl.atomic_add(cnt_ptr, 1)
    while tl.load(cnt_ptr, volatile=True) < n:
        pass
    tl.store(out_ptr + pid, tl.load(cnt_ptr) * 10 + pid)


@pytest.mark.parametrize("num_warps", [1, 4])
def test_triton_grid_barrier_completes(num_warps):
    cnt, out = np.zeros(1, np.int32), np.zeros(4, np.int32)
    st = tt.run(grid_barrier_kernel, (4,), cnt_ptr=cnt, out_ptr=out, n=4, num_warps=num_warps)
    assert cnt[0] == 4 and out.tolist() == [4, 5, 6, 7] and st["ctas"] == 4


# three tests, not one: the two deadlocks are long interpreter runs, and apart they run on both pytest-xdist workers

def test_triton_volatile_spin_barrier_completes():
    cnt, out = np.zeros(1, np.int32), np.zeros(3, np.int32)
    tt.run(volatile_barrier_kernel, (3,), cnt_ptr=cnt, out_ptr=out, n=3)
    assert out.tolist() == [30, 31, 32]


def test_triton_volatile_spin_one_program_too_many_deadlocks():
    cnt, out = np.zeros(1, np.int32), np.zeros(3, np.int32)   # waits for 4 programs of 3: nobody raises the count
    with pytest.raises(tcemu.ptx.Deadlock) as e:
        tt.run(volatile_barrier_kernel, (3,), cnt_ptr=cnt, out_ptr=out, n=4)
    msg = str(e.value)
    assert not isinstance(e.value, tcemu.ptx.BudgetExceeded)
    assert "every unfinished warp is blocked or spins in a loop that only reads memory nobody will change" in msg
    assert "; every CTA of the launch has started (3 of 3 still running):" in msg
    assert "holding 0x3; last written by CTA (2, 0, 0) warp 0: " in msg and "atom.global" in msg


def test_triton_volatile_spin_with_too_few_resident_ctas_deadlocks():
    cnt, out = np.zeros(1, np.int32), np.zeros(3, np.int32)
    with pytest.raises(tcemu.ptx.Deadlock, match=r"more CTAs than resident=2 allows at once \(2 resident of 3\)"):
        tt.run(volatile_barrier_kernel, (3,), cnt_ptr=cnt, out_ptr=out, n=3, launch={"resident": 2})
