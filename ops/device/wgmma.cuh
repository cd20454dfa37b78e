#pragma once
// Warpgroup matrix multiply-accumulate (wgmma.mma_async, sm_90a) for the shapes our kernels use,
// fp32 accumulators, 16-bit inputs (T = __nv_bfloat16 or __half):
//   mma_ss<T, N, kTransA, kTransB>(d, a_desc, b_desc, accumulate): D(64×N) (+)= A(64×16) ·
//     B(16×N), N = 32, 64 or 128, A and B in shared memory (descriptors: ops/device/hopper.cuh,
//     sw128_desc), each K-major (kTrans = 0) or M/N-major (1);
//   mma_rs_nmajor<T, N>(d, a, b_desc): D(64×N) += A(64×16) · B(16×N), N = 64 or 128, A in
//     registers, B in shared memory N-major (each row of K holds N contiguous elements).
// Fragments (PTX ISA "Register Fragments and Shared Memory Matrix Layouts", m64nNk16), for
// warp w of the warpgroup, lane = 4g + t:
//   D: d[4j + 0, 1] = D[16w + g][8j + 2t, +1],  d[4j + 2, 3] = D[16w + g + 8][8j + 2t, +1]
//   A: a[0] = A[16w + g][2t, +1], a[1] = A[16w + g + 8][2t, +1], a[2] = A[16w + g][2t + 8, +9],
//      a[3] = A[16w + g + 8][2t + 8, +9]   (two 16-bit elements per register, lower column low)
// so the D fragment's columns 16c..16c+15, packed to 16 bits, are the A fragment of k-chunk c:
//   a = {pack(d[8c], d[8c+1]), pack(d[8c+2], d[8c+3]), pack(d[8c+4], d[8c+5]),
//        pack(d[8c+6], d[8c+7])}.
// FP8 (e4m3 inputs, k = 32, both operands K-major: 8-bit types have no transposed form):
//   mma_ss_e4m3(d, a_desc, b_desc, accumulate): D(64×128) (+)= A(64×32) · B(32×128);
//   mma_rs_e4m3(d, a, b_desc): D(64×128) += A(64×32) · B(32×128), A in registers:
//   a[0] = A[16w + g][4t .. 4t + 3], a[1] = A[16w + g + 8][4t ..], a[2] = A[16w + g][16 + 4t ..],
//   a[3] = A[16w + g + 8][16 + 4t ..]   (four 8-bit elements per register, lower column low).
// Every call is asynchronous: wgmma_fence before, wgmma_commit and wgmma_wait after.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace gptbench {
namespace sm90 {

// Output operand lists: the accumulators d[0..N/2).
#define GPTBENCH_D8(i)                                                                     \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define GPTBENCH_D16(i) GPTBENCH_D8(i), GPTBENCH_D8(i + 8)
#define GPTBENCH_D32(i) GPTBENCH_D16(i), GPTBENCH_D16(i + 16)
#define GPTBENCH_D64 GPTBENCH_D32(0), GPTBENCH_D32(32)
// Register lists of 16, 32 and 64 accumulators in the instruction text.
#define GPTBENCH_R16 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define GPTBENCH_R32 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define GPTBENCH_R64 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"

// SS form: NR accumulators %0..%(NR-1), then (O0..O4) the A and B descriptors, the accumulate
// flag and the two transposes (immediates). TY: "bf16" or "f16"; SHAPE: "m64n64k16" etc.
#define GPTBENCH_WGMMA_SS(SHAPE, TY, RLIST, DOPS, O0, O1, O2, O3, O4)                         \
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, " O2 ", 0;\n"                               \
               " wgmma.mma_async.sync.aligned." SHAPE ".f32." TY "." TY " {" RLIST "}, " O0 \
               ", " O1 ", p, 1, 1, " O3 ", " O4 ";\n}\n"                                       \
               : DOPS                                                                         \
               : "l"(a_desc), "l"(b_desc), "r"(static_cast<int>(accumulate)), "n"(kTransA),   \
                 "n"(kTransB))
#define GPTBENCH_SS16(SHAPE, TY) \
  GPTBENCH_WGMMA_SS(SHAPE, TY, GPTBENCH_R16, GPTBENCH_D16(0), "%16", "%17", "%18", "%19", "%20")
#define GPTBENCH_SS32(SHAPE, TY) \
  GPTBENCH_WGMMA_SS(SHAPE, TY, GPTBENCH_R32, GPTBENCH_D32(0), "%32", "%33", "%34", "%35", "%36")
#define GPTBENCH_SS64(SHAPE, TY) \
  GPTBENCH_WGMMA_SS(SHAPE, TY, GPTBENCH_R64, GPTBENCH_D64, "%64", "%65", "%66", "%67", "%68")
// RS form with B N-major (trans-b = 1): the four A registers (O0..O3) follow the accumulators,
// then the B descriptor (O4); D accumulates.
#define GPTBENCH_WGMMA_RS(SHAPE, TY, RLIST, DOPS, O0, O1, O2, O3, O4)                          \
  asm volatile(" wgmma.mma_async.sync.aligned." SHAPE ".f32." TY "." TY " {" RLIST "}, {" O0 \
               ", " O1 ", " O2 ", " O3 "}, " O4 ", 1, 1, 1, 1;\n"                               \
               : DOPS                                                                          \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc))
#define GPTBENCH_RS32(SHAPE, TY) \
  GPTBENCH_WGMMA_RS(SHAPE, TY, GPTBENCH_R32, GPTBENCH_D32(0), "%32", "%33", "%34", "%35", "%36")
#define GPTBENCH_RS64(SHAPE, TY) \
  GPTBENCH_WGMMA_RS(SHAPE, TY, GPTBENCH_R64, GPTBENCH_D64, "%64", "%65", "%66", "%67", "%68")

template <typename T>
constexpr bool kIsBf16 = std::is_same_v<T, __nv_bfloat16>;

template <typename T, int N, int kTransA = 0, int kTransB = 0>
__device__ __forceinline__ void mma_ss(float (&d)[N / 2], uint64_t a_desc, uint64_t b_desc,
                                       bool accumulate) {
  static_assert(N == 32 || N == 64 || N == 128, "N = 32, 64 or 128");
  if constexpr (N == 32 && kIsBf16<T>) {
    GPTBENCH_SS16("m64n32k16", "bf16");
  } else if constexpr (N == 32) {
    GPTBENCH_SS16("m64n32k16", "f16");
  } else if constexpr (N == 64 && kIsBf16<T>) {
    GPTBENCH_SS32("m64n64k16", "bf16");
  } else if constexpr (N == 64) {
    GPTBENCH_SS32("m64n64k16", "f16");
  } else if constexpr (kIsBf16<T>) {
    GPTBENCH_SS64("m64n128k16", "bf16");
  } else {
    GPTBENCH_SS64("m64n128k16", "f16");
  }
}

template <typename T, int N>
__device__ __forceinline__ void mma_rs_nmajor(float (&d)[N / 2], const uint32_t (&a)[4],
                                              uint64_t b_desc) {
  static_assert(N == 64 || N == 128, "N = 64 or 128");
  if constexpr (N == 64 && kIsBf16<T>) {
    GPTBENCH_RS32("m64n64k16", "bf16");
  } else if constexpr (N == 64) {
    GPTBENCH_RS32("m64n64k16", "f16");
  } else if constexpr (kIsBf16<T>) {
    GPTBENCH_RS64("m64n128k16", "bf16");
  } else {
    GPTBENCH_RS64("m64n128k16", "f16");
  }
}

// The FP8 forms (PTX ISA: no transpose immediates for .e4m3).
__device__ __forceinline__ void mma_ss_e4m3(float (&d)[64], uint64_t a_desc, uint64_t b_desc,
                                            bool accumulate) {
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %66, 0;\n"
               " wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {" GPTBENCH_R64
               "}, %64, %65, p, 1, 1;\n}\n"
               : GPTBENCH_D64
               : "l"(a_desc), "l"(b_desc), "r"(static_cast<int>(accumulate)));
}
__device__ __forceinline__ void mma_rs_e4m3(float (&d)[64], const uint32_t (&a)[4],
                                            uint64_t b_desc) {
  asm volatile(" wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {" GPTBENCH_R64
               "}, {%64, %65, %66, %67}, %68, 1, 1, 1;\n"
               : GPTBENCH_D64
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc));
}

#undef GPTBENCH_WGMMA_SS
#undef GPTBENCH_SS16
#undef GPTBENCH_SS32
#undef GPTBENCH_SS64
#undef GPTBENCH_RS32
#undef GPTBENCH_RS64
#undef GPTBENCH_WGMMA_RS
#undef GPTBENCH_R16
#undef GPTBENCH_R32
#undef GPTBENCH_R64
#undef GPTBENCH_D64
#undef GPTBENCH_D32
#undef GPTBENCH_D16
#undef GPTBENCH_D8

}  // namespace sm90
}  // namespace gptbench
