"""The harness of the tcgen05 kernels of tests/ptx/test_tcgen05.py and test_tcgen05_forms.py: 128 threads copy a
shared-memory image from global memory, fence the async proxy, warp 0 allocates tensor memory (PROLOGUE); everyone
waits on the MMA's mbarrier and reads its 32 lanes back (EPILOGUE); descriptors and random operand bits."""
import numpy as np

from tcemu import UmmaDescriptor


HEADER = ".version 8.8\n.target sm_100a\n.address_size 64\n"
BASE = 0x400          # the dynamic shared array starts here
IMG = 0x8000          # bytes of the image (operands at BASE .. BASE + IMG)
BAR = BASE + IMG      # the mbarrier
SLOT = BAR + 8        # tcgen05.alloc writes the tensor-memory address here

REGS = """\
  .reg .pred %p<16>;
  .reg .b32 %r<64>;
  .reg .b64 %rd<32>;
  .reg .b32 %d<128>;
"""

# %r0 tid, %r1 warp, %r2 lane; the image copied into shared memory; warp 0 allocates COLS columns; %r10 = taddr
PROLOGUE = """\
  mov.u32 %r0, %tid.x;
  shr.u32 %r1, %r0, 5;
  and.b32 %r2, %r0, 31;
  ld.param.u64 %rd0, [img];
  cvta.to.global.u64 %rd0, %rd0;
  mul.wide.u32 %rd1, %r0, 16;
  mov.u64 %rd2, %rd1;
COPY:
  setp.ge.u64 %p0, %rd2, {IMG};
  @%p0 bra COPIED;
  add.s64 %rd3, %rd0, %rd2;
  ld.global.v4.u32 {{%r20, %r21, %r22, %r23}}, [%rd3];
  cvt.u32.u64 %r24, %rd2;
  add.u32 %r24, %r24, dyn;
  st.shared.v4.u32 [%r24], {{%r20, %r21, %r22, %r23}};
  add.s64 %rd2, %rd2, {STRIDE};
  bra COPY;
COPIED:
  fence.proxy.async.shared::cta;
  setp.ne.u32 %p1, %r1, 0;
  mov.u32 %r11, dyn;
  add.u32 %r11, %r11, {SLOT_OFF};
  @!%p1 tcgen05.alloc.cta_group::{G}.sync.aligned.shared::cta.b32 [%r11], {COLS};
  @!%p1 tcgen05.relinquish_alloc_permit.cta_group::{G}.sync.aligned;
  setp.ne.u32 %p2, %r0, 0;
  mov.u32 %r12, dyn;
  add.u32 %r12, %r12, {BAR_OFF};
  @!%p2 mbarrier.init.shared::cta.b64 [%r12], 1;
  bar.sync 0;
  ld.shared.u32 %r10, [%r11];
"""

EPILOGUE = """\
  // everyone waits for the commit, reads its 32 lanes x {N} columns and stores them as out[lane][column]
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r12], 0;
  @!%p3 bra WAIT;
  tcgen05.fence::after_thread_sync;
  shl.b32 %r13, %r1, 21;
  add.u32 %r13, %r13, %r10;
  tcgen05.ld.sync.aligned.32x32b.x{N}.b32 {{{DREGS}}}, [%r13];
  tcgen05.wait::ld.sync.aligned;
  ld.param.u64 %rd4, [out];
  cvta.to.global.u64 %rd4, %rd4;
  mul.wide.u32 %rd5, %r0, {ROWBYTES};
  add.s64 %rd4, %rd4, %rd5;
  mov.u32 %r14, %ctaid.x;
  mul.wide.u32 %rd5, %r14, {CTABYTES};
  add.s64 %rd4, %rd4, %rd5;
{STORES}
  bar.sync 0;
  @!%p1 tcgen05.dealloc.cta_group::{G}.sync.aligned.b32 %r10, {COLS};
  ret;
"""



def desc(addr, rows, k, bits, swizzle="none"):
    """K-major no-swizzle descriptor of a dense (rows, k) tile (8 x 16-byte core matrices, LBO 128)."""
    return UmmaDescriptor(start_address=addr, lbo=128, sbo=128 * (k * bits // 128), swizzle=swizzle, version=1)



def rand_bits(rng, shape, dtype):
    """Raw bits of finite, moderate values (exponent near the bias), as small integers are not enough for fp8."""
    if dtype in ("f16", "bf16"):
        v = rng.integers(-64, 64, shape) / 8.0
        return (v.astype(np.float16).view(np.uint16) if dtype == "f16" else
                (v.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16))
    if dtype == "tf32":
        return (rng.integers(-64, 64, shape) / 8.0).astype(np.float32).view(np.uint32)
    if dtype == "e4m3":
        b = rng.integers(0, 256, shape).astype(np.uint8)
        b[(b & 0x7F) == 0x7F] = 0x38
        return b
    if dtype in ("e2m1", "e2m3", "e3m2"):
        return rng.integers(0, 1 << {"e2m1": 4}.get(dtype, 6), shape).astype(np.uint8)
    return rng.integers(0, 256, shape).astype(np.uint8)          # s8 / u8 bytes
