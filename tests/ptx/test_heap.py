"""Device-side malloc and free (tcemu/ptx/heap.py, ops/calls.py): a block per calling thread, NULL once the heap is
full, faults that name a use after free, a double free and a free of an address malloc did not return."""
import numpy as np
import pytest

import tcemu.ptx as ptx

from ptxkit import HEADER

# thread t: p = malloc(n); out[t] = p != NULL; p[0..3] = t * 10 + i; out[32 + t] = p[0] + p[3]; free(p); then by
# `mode`: 1, thread 5 reads p[2] after its free; 2, thread 7 frees p again; 3, thread 2 frees p + 4
KERNEL = HEADER + """
.extern .func (.param .b64 func_retval0) malloc(.param .b64 malloc_param_0);
.extern .func free(.param .b64 free_param_0);
.visible .entry k(.param .u64 out, .param .u64 n, .param .u32 mode)
{
  .reg .pred %p<8>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  ld.param.u64 %rd2, [n];
  ld.param.u32 %r9, [mode];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  { .param .b64 param0;
    st.param.b64 [param0], %rd2;
    .param .b64 retval0;
    call.uni (retval0), malloc, (param0);
    ld.param.b64 %rd5, [retval0]; }
  setp.ne.s64 %p1, %rd5, 0;
  selp.u32 %r2, 1, 0, %p1;
  st.global.u32 [%rd4], %r2;
  @!%p1 bra DONE;
  mul.lo.u32 %r3, %r1, 10;
  st.u32 [%rd5], %r3;
  add.u32 %r4, %r3, 1;
  st.u32 [%rd5+4], %r4;
  add.u32 %r4, %r3, 2;
  st.u32 [%rd5+8], %r4;
  add.u32 %r4, %r3, 3;
  st.u32 [%rd5+12], %r4;
  ld.u32 %r5, [%rd5];
  ld.u32 %r6, [%rd5+12];
  add.u32 %r7, %r5, %r6;
  st.global.u32 [%rd4+128], %r7;
  { .param .b64 param0;
    st.param.b64 [param0], %rd5;
    call.uni free, (param0); }
  setp.eq.u32 %p2, %r9, 1;
  setp.eq.u32 %p3, %r1, 5;
  and.pred %p2, %p2, %p3;
  @%p2 ld.u32 %r8, [%rd5+8];
  setp.eq.u32 %p4, %r9, 2;
  setp.eq.u32 %p5, %r1, 7;
  and.pred %p4, %p4, %p5;
  @!%p4 bra THIRD;
  { .param .b64 param0;
    st.param.b64 [param0], %rd5;
    call.uni free, (param0); }
THIRD:
  setp.eq.u32 %p6, %r9, 3;
  setp.eq.u32 %p7, %r1, 2;
  and.pred %p6, %p6, %p7;
  @!%p6 bra DONE;
  add.s64 %rd6, %rd5, 4;
  { .param .b64 param0;
    st.param.b64 [param0], %rd6;
    call.uni free, (param0); }
DONE:
  ret;
}
"""


def run(n=16, mode=0, **kw):
    out = np.zeros(64, np.uint32)
    ptx.load(KERNEL).launch("k", grid=1, block=32, args=[out, np.uint64(n), np.uint32(mode)], **kw)
    return out


def test_every_thread_gets_a_block_of_its_own():
    out = run()
    t = np.arange(32)
    assert out[:32].tolist() == [1] * 32
    assert out[32:].tolist() == (2 * 10 * t + 3).tolist()   # p[0] + p[3]: no two threads share a byte


def test_malloc_returns_null_once_the_heap_is_full():
    # 16-byte blocks from a 100-byte heap: the first six calling threads get one (lanes in order), the rest NULL
    out = run(heap_bytes=100)
    assert out[:32].tolist() == [1] * 6 + [0] * 26
    assert out[32:38].tolist() == [20 * t + 3 for t in range(6)] and out[38:].tolist() == [0] * 26
    assert run(heap_bytes=15)[:32].tolist() == [0] * 32


def test_malloc_of_no_bytes_is_a_block_no_access_may_touch():
    # an H200 returned non-NULL for malloc(0) (session 12); the kernel's stores into it fault
    with pytest.raises(ptx.MemoryFault, match=r"thread 0 accesses 4 bytes at global address 0x[0-9a-f]+, outside every "
                                               r"allocation: .*'malloc#1 \(0 bytes, thread 0 of CTA"):
        run(n=0)


def test_reading_a_freed_block_names_the_free():
    with pytest.raises(ptx.MemoryFault, match=r"thread 5 accesses 4 bytes at global address 0x[0-9a-f]+, outside "
                                               r"every allocation: 8 bytes into 'malloc#6 \(16 bytes, thread 5 of CTA "
                                               r"\(0, 0, 0\)\)' \(16 bytes\), freed by free\(\) by thread 5"):
        run(mode=1)


def test_a_double_free_and_a_free_of_an_inner_address_are_faults():
    with pytest.raises(ptx.KernelFault, match=r"free\(\) by thread 7 of CTA \(0, 0, 0\) frees 0x[0-9a-f]+, "
                                              r"'malloc#8 \(16 bytes, thread 7 of CTA \(0, 0, 0\)\)', which was freed "
                                              r"already \(double free\)"):
        run(mode=2)
    with pytest.raises(ptx.KernelFault, match=r"free\(\) by thread 2 of CTA \(0, 0, 0\) frees 0x[0-9a-f]+, which no "
                                              r"device-side malloc returned \(in 4 bytes into 'malloc#3"):
        run(mode=3)


def test_the_heap_size_is_checked():
    with pytest.raises(ptx.PtxError, match="heap_bytes"):
        run(heap_bytes=-1)
