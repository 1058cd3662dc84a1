// Warp-level tensor-core and async-copy primitives of sm_80 and later (inline PTX; Hopper runs them as
// well), shared by the float16 flash attention kernels (group_query_attention_flash.hip,
// attention_flash.hip) and the int4 kernels (matmul_nbits_mma.hip, matmul_nbits_gemm.hip). CUDA only
// (empty on HIP); use it in code compiled for __CUDA_ARCH__ >= 800.
#ifndef HIPDNN_EP_KERNELS_GPU_MMA_SM80_H_
#define HIPDNN_EP_KERNELS_GPU_MMA_SM80_H_

#include <cstdint>

#include "gpu/gpu_device.h"

#if defined(HIPDNN_EP_PLATFORM_CUDA)
namespace hipdnn_ep::kernels::gpu {

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8x8 matrices of 16-bit elements from shared memory; lane l gives the address of row l % 8 of matrix l / 8.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// c += a (16 x 16, row-major fragment) * b (16 x 8, column-major fragment), float accumulators. Not volatile:
// it reads and writes registers only, so the compiler may move it among the loads and other mma.
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();  // callers launch their kernels only on devices of compute capability 8.0 or more
#endif
}

// 16 bytes global -> shared, asynchronously; zeros when !valid (nothing is read then).
__device__ __forceinline__ void copy16_async(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void copy_async_wait_one() { asm volatile("cp.async.wait_group 1;\n" ::); }
__device__ __forceinline__ void copy_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::); }

// A half pair's bits as a 32-bit word and back (operands of mma and of logic ops).
__device__ __forceinline__ uint32_t half2_bits(__half2 h) { return *reinterpret_cast<const uint32_t*>(&h); }
__device__ __forceinline__ __half2 bits_half2(uint32_t u) { return *reinterpret_cast<const __half2*>(&u); }

// (w & kMask) | kBits as one lop3 with both constants immediate: written in C, the compiler spends a
// register on one constant and emits two logic ops. The int4 kernels turn nibbles into halves with it.
template <uint32_t kMask, uint32_t kBits>
__device__ __forceinline__ uint32_t and_or(uint32_t w) {
  uint32_t r;
  // lop3's table for (a & b) | c is (0xF0 & 0xCC) | 0xAA = 0xEA
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(r) : "r"(w), "n"(kMask), "n"(kBits));
  return r;
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

}  // namespace hipdnn_ep::kernels::gpu
#endif  // HIPDNN_EP_PLATFORM_CUDA

#endif  // HIPDNN_EP_KERNELS_GPU_MMA_SM80_H_
