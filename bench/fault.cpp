// Fault family (test only): registered only with --gptbench_fault=abort|segv|illegal_address,
// so that gptbench-run's fault isolation can be shown on a real run. Three benchmarks:
//   fault/ok/before                  a tiny matmul that succeeds (runs before the fault)
//   fault/<kind>/crash               faults while it is being prepared:
//                                      abort            std::abort()        (SIGABRT)
//                                      segv             raise(SIGSEGV)      (what a wild write gets)
//                                      illegal_address  a CUDA kernel writes through a bad pointer;
//                                                       the sticky cudaErrorIllegalAddress poisons
//                                                       the process (needs a GPU; skipped on CPU)
//   fault/ok/after                   a tiny matmul that succeeds (runs after the fault)
// cost: 2·n³ FLOPs for the matmuls, none for the crash.
#include <ATen/ATen.h>

#include <csignal>
#include <cstdlib>

#include "fixtures/bench_name.h"
#include "fixtures/family.h"
#include "fixtures/case_runner.h"
#ifdef GPTBENCH_WITH_CUDA
#include "ops/fault_kernel.h"
#endif

namespace gptbench {
namespace {

constexpr int64_t kN = 64;  // matmul size of the benchmarks that succeed

Case make_ok_case(c10::Device device) {
  auto opts = at::TensorOptions().device(device).dtype(at::kFloat);
  auto a = at::randn({kN, kN}, opts);  // (n, n)
  auto b = at::randn({kN, kN}, opts);  // (n, n)
  Case c;
  c.run = [=] { (void)at::mm(a, b); };
  c.cost = {2.0 * kN * kN * kN, 0, PeakKind::kGemmFp32};
  return c;
}

[[noreturn]] void crash(const std::string& kind) {
  if (kind == "segv") std::raise(SIGSEGV);  // default action: terminate with SIGSEGV
  std::abort();
}

Case make_fault_case(const std::string& kind) {
  Case c;
  if (kind == "illegal_address") {
#ifdef GPTBENCH_WITH_CUDA
    c.run = [] { launch_illegal_write(); };  // throws CudaError; the context stays poisoned
#endif
  } else {
    c.run = [kind] { crash(kind); };
  }
  return c;
}

}  // namespace

GPTBENCH_FAMILY(fault, const SuiteInputs& in) {
  if (in.fault == "none") return;
  const c10::Device device = in.device;
  auto ok = [device](const char* when) {
    CaseSpec spec;
    spec.name = BenchName("fault", {"ok", when});
    spec.make = [device] { return make_ok_case(device); };
    register_case(std::move(spec));
  };
  ok("before");
  CaseSpec spec;
  spec.name = BenchName("fault", {in.fault, "crash"});
  spec.needs_cuda_kernels = in.fault == "illegal_address";
  spec.make = [kind = in.fault] { return make_fault_case(kind); };
  register_case(std::move(spec));
  ok("after");
}

}  // namespace gptbench
