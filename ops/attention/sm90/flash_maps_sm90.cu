#include "ops/attention/sm90/flash_maps_sm90.h"

#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdint>

#include "ops/attention/flash_tiles.h"
#include "ops/cuda_check.h"
#include "ops/device/attributes.h"

namespace gptbench {
namespace flash_sm90 {
namespace {

// cuTensorMapEncodeTiled through the runtime's driver entry point (no link-time dependence on
// the driver library, so CPU-only machines load the binary).
PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000,
                                                cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || f == nullptr)
      throw CudaError("flash attention (sm90): the driver has no cuTensorMapEncodeTiled");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

bool stride_ok(const FlashStrides& st) {
  return st.row > 0 && st.head > 0 && st.batch > 0 && st.row % 8 == 0 && st.head % 8 == 0 &&
         st.batch % 8 == 0;
}

}  // namespace

namespace {

CUtensorMap encode(const void* data, CUtensorMapDataType type, int elem_bytes, const FlashStrides& st,
                   int B, int H, int L, int d, int box_cols, int box_rows) {
  CUtensorMap map;
  const cuuint64_t dims[4] = {cuuint64_t(d), cuuint64_t(L), cuuint64_t(H), cuuint64_t(B)};
  const cuuint64_t strides[3] = {cuuint64_t(st.row) * elem_bytes, cuuint64_t(st.head) * elem_bytes,
                                 cuuint64_t(st.batch) * elem_bytes};
  const cuuint32_t box[4] = {cuuint32_t(box_cols), cuuint32_t(box_rows), 1, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  const CUresult r = encode_tiled()(&map, type, 4, const_cast<void*>(data), dims, strides, box,
                                    elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                    CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw CudaError("flash attention (sm90): cuTensorMapEncodeTiled failed with CUresult " +
                    std::to_string(static_cast<int>(r)));
  return map;
}

}  // namespace

CUtensorMap tensor_map(const void* data, const FlashStrides& st, int B, int H, int L, int d,
                       ElemType dtype, int box_rows) {
  return encode(data,
                dtype == ElemType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                         : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                2, st, B, H, L, d, 64, box_rows);
}

CUtensorMap tensor_map_e4m3(const void* data, const FlashStrides& st, int B, int H, int rows,
                            int cols, int box_rows) {
  return encode(data, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, st, B, H, rows, cols, 128, box_rows);
}

CUtensorMap tensor_map_f32(const float* data, const FlashStrides& st, int B, int H, int L, int d,
                           int box_rows) {
  return encode(data, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, st, B, H, L, d, 32, box_rows);
}

FlashHeadGroups head_groups(int64_t bytes_per_head, int bh_total, int items, int tail_waves) {
  const int group = flash_sm90_heads_per_group(bh_total, bytes_per_head,
                                               device_attribute(cudaDevAttrL2CacheSize));
  return flash_sm90_head_groups(bh_total, group, items, int64_t{tail_waves} * sm_count());
}

std::string unsupported(int d, int64_t batch_heads, int L, int cc_major, int cc_minor,
                        std::initializer_list<FlashStrides> strides,
                        std::initializer_list<const void*> ptrs) {
  if (cc_major != 9 || cc_minor != 0)
    return "needs compute capability 9.0 (H100/H200), this GPU has " + std::to_string(cc_major) +
           "." + std::to_string(cc_minor);
  if (d != 64 && d != 128) return "head dim " + std::to_string(d) + " (takes 64 and 128)";
  for (const FlashStrides& st : strides)
    if (!stride_ok(st)) return "strides must be positive multiples of 8 elements";
  for (const void* ptr : ptrs)
    if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0) return "inputs must be 16-byte aligned";
  if (batch_heads * ((int64_t{L} + 63) / 64) > 0x7fffffff)
    return "more than 2^31 tiles of 64 rows (32-bit tile indices)";
  return "";
}

}  // namespace flash_sm90
}  // namespace gptbench
