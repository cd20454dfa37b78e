#include "ops/cublaslt_device.h"

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "ops/cuda_check.h"
#include "ops/gpu_hold.h"
#include "runjson/median.h"

namespace gptbench {

namespace {

// Two CUDA events, destroyed with the scope (also when an option throws).
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    CUDA_CHECK(cudaEventCreate(&start));
    try {
      CUDA_CHECK(cudaEventCreate(&stop));
    } catch (...) {
      cudaEventDestroy(start);
      throw;
    }
  }
  ~EventPair() {
    cudaEventDestroy(stop);
    cudaEventDestroy(start);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
};

// Milliseconds of GPU time taken by `reps` calls of `option` on `stream` (synchronises it).
float time_batch(EventPair& ev, const std::function<void()>& option, int reps, cudaStream_t stream) {
  CUDA_CHECK(cudaEventRecord(ev.start, stream));
  for (int r = 0; r < reps; ++r) option();
  CUDA_CHECK(cudaEventRecord(ev.stop, stream));
  CUDA_CHECK(cudaEventSynchronize(ev.stop));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
  return ms;
}

}  // namespace

size_t fastest_option(const std::vector<std::function<void()>>& options, cudaStream_t stream,
                      int reps, int rounds, double margin) {
  if (options.empty()) throw std::invalid_argument("fastest_option: no option to time");
  EventPair ev;
  const size_t n = options.size();
  std::vector<std::vector<float>> ms(n);  // each option's batch time, one per round
  for (const auto& option : options) option();  // warm-up
  const uint64_t hold_ns = kTimerHoldNs + static_cast<uint64_t>(reps) * kEnqueueNsPerCall;
  for (int round = 0; round < rounds; ++round) {
    for (size_t j = 0; j < n; ++j) {
      const size_t i = (j + static_cast<size_t>(round)) % n;  // each round starts with another
      launch_gpu_hold(stream, hold_ns);
      ms[i].push_back(time_batch(ev, options[i], reps, stream));
    }
  }
  // Each option against the incumbent, round by round (one round's batches run within
  // milliseconds, at one clock): the median of the incumbent's time over the option's.
  size_t best = 0;
  double best_ratio = 1.0;
  for (size_t i = 1; i < n; ++i) {
    std::vector<double> ratios;
    for (int r = 0; r < rounds; ++r) ratios.push_back(ms[0][static_cast<size_t>(r)] / ms[i][static_cast<size_t>(r)]);
    const double ratio = runjson::median(std::move(ratios));
    if (ratio > best_ratio) {
      best = i;
      best_ratio = ratio;
    }
  }
  return best_ratio * (1.0 - margin) > 1.0 ? best : 0;
}

void settle_on(const std::function<void()>& option, cudaStream_t stream, double seconds) {
  EventPair ev;
  for (double done = 0; done < seconds;) done += std::max(1e-3 * time_batch(ev, option, 10, stream), 1e-6);
}

LtDevice lt_device(int device) {
  static std::mutex mu;
  static std::map<int, cublasLtHandle_t> handles;
  static std::map<int, at::Tensor> workspaces;
  std::lock_guard<std::mutex> lock(mu);
  auto& h = handles[device];
  if (!h) CUBLAS_CHECK(cublasLtCreate(&h));
  auto& ws = workspaces[device];
  if (!ws.defined())
    ws = at::empty({static_cast<int64_t>(kLtWorkspaceBytes)},
                   at::TensorOptions().dtype(at::kByte).device(at::kCUDA, device));
  return {h, ws.data_ptr()};
}

LtContext lt_context(int device) {
  const LtDevice lt = lt_device(device);
  return {lt.handle, lt.workspace, at::cuda::getCurrentCUDAStream(device).stream()};
}

namespace {

// A column-major (rows, cols) operand, or its transpose stored (cols, rows).
cublasLtMatrixLayout_t create_layout(cudaDataType_t data, int64_t rows, int64_t cols, bool transposed) {
  cublasLtMatrixLayout_t layout = nullptr;
  if (transposed)
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, data, cols, rows, cols));
  else
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, data, rows, cols, rows));
  return layout;
}

}  // namespace

LtMatmulDescs::LtMatmulDescs(cublasComputeType_t compute, cudaDataType_t data, cudaDataType_t out,
                             int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b) {
  try {
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, compute, CUDA_R_32F));
    set(CUBLASLT_MATMUL_DESC_TRANSA, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N);
    set(CUBLASLT_MATMUL_DESC_TRANSB, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N);
    a = create_layout(data, m, k, trans_a);
    b = create_layout(data, k, n, trans_b);
    d = create_layout(out, m, n, false);
  } catch (...) {
    release();  // what was created before the failure
    throw;
  }
}

LtMatmulDescs::~LtMatmulDescs() { release(); }

void LtMatmulDescs::release() noexcept {
  // Called from the destructor: nothing to report a failure to.
  if (d) cublasLtMatrixLayoutDestroy(d);
  if (b) cublasLtMatrixLayoutDestroy(b);
  if (a) cublasLtMatrixLayoutDestroy(a);
  if (op) cublasLtMatmulDescDestroy(op);
}

void LtMatmulDescs::set_raw(cublasLtMatmulDescAttributes_t attr, const void* value, size_t bytes) {
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, attr, value, bytes));
}

std::vector<cublasLtMatmulAlgo_t> lt_heuristic_algos(const LtContext& lt, const LtMatmulDescs& p, int most) {
  cublasLtMatmulPreference_t pref;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(std::max(most, 1)));
  int found = 0;
  try {
    size_t ws_bytes = kLtWorkspaceBytes;
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                                      sizeof(ws_bytes)));
    CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(lt.handle, p.op, p.a, p.b, p.d, p.d, pref,
                                                static_cast<int>(results.size()), results.data(), &found));
  } catch (...) {
    cublasLtMatmulPreferenceDestroy(pref);
    throw;
  }
  CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
  std::vector<cublasLtMatmulAlgo_t> algos;
  for (int i = 0; i < found; ++i)
    if (results[static_cast<size_t>(i)].state == CUBLAS_STATUS_SUCCESS) algos.push_back(results[static_cast<size_t>(i)].algo);
  return algos;
}

cublasLtMatmulAlgo_t lt_choose_algo(const LtContext& lt, const std::vector<cublasLtMatmulAlgo_t>& candidates,
                                    LtAlgoChoice choice,
                                    const std::function<void(const cublasLtMatmulAlgo_t&)>& launch) {
  if (candidates.empty()) throw std::invalid_argument("lt_choose_algo: no candidate algorithm");
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(lt.stream, &capturing));
  if (choice == LtAlgoChoice::kHeuristic || candidates.size() == 1 || capturing != cudaStreamCaptureStatusNone)
    return candidates.front();
  std::vector<std::function<void()>> options;
  for (const cublasLtMatmulAlgo_t& c : candidates) options.push_back([&launch, &c] { launch(c); });
  settle_on(options.front(), lt.stream, kLtSearchSettleSeconds);
  return candidates[fastest_option(options, lt.stream, kLtSearchReps, kLtSearchRounds, kLtSearchMargin)];
}

}  // namespace gptbench
#endif  // GPTBENCH_WITH_CUDA
