// A CuTe Blackwell tutorial (nvidia-cutlass wheel, examples/cute/tutorial/blackwell/NN_*.cu), included unmodified, with
// its debug printing compiled out: `print(...)` and `printf(...)` become no-ops after the tutorial's own headers are
// in. Its kernels' `if (thread0()) { print(...); }` blocks are the only difference from the shipped file (tcemu's
// interpreter does not model vprintf calls); scripts/cute_sm100_kernels.py records both opcode censuses.
// -DTCEMU_FENCE_BEFORE_SYNCTHREADS adds the async-proxy fence tutorial 01 lacks (see below).
//
//   nvcc ... -DTCEMU_TUTORIAL='"cute/tutorial/blackwell/01_mma_sm100.cu"' scripts/cute_sm100/tutorial.cu
#include <iostream>
#include <cstdio>
#include <thrust/host_vector.h>
#include <thrust/device_vector.h>
#include <cutlass/half.h>
#include <cutlass/util/print_error.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/cluster_launch.hpp>
#include <cute/tensor.hpp>
#include <cute/arch/cluster_sm90.hpp>
#include <cute/numeric/integral_constant.hpp>
#include <cute/algorithm/cooperative_copy.hpp>
#include <cute/arch/tmem_allocator_sm100.hpp>
#include "cute/tutorial/blackwell/example_utils.hpp"

#define print(...) ((void)0)
#define printf(...) ((void)0)
#if defined(TCEMU_FENCE_BEFORE_SYNCTHREADS)
// Tutorial 01 stores its A and B tiles with generic-proxy st.shared and hands them to tcgen05.mma (async proxy)
// after __syncthreads() alone; PTX 9.7.16.6.5 asks for fence.proxy.async between the two (tcemu reports the missing
// fence). This variant puts CUTLASS's fence_view_async_shared() (fence.proxy.async.shared::cta) before every
// __syncthreads() of the tutorial, and changes nothing else.
#define __syncthreads() (cutlass::arch::fence_view_async_shared(), __syncthreads())
#endif
#include TCEMU_TUTORIAL
#undef print
#undef printf
