// libFuzzer target: the values of gptbench's own flags (fixtures/options.cpp). The input is
// split at NUL bytes into arguments, each given a --gptbench_ flag name chosen by its first
// byte (or passed as it is when that byte is 0xff); parse_options must return an error or
// options, never throw or crash, and accepted options must be usable: a known device, known
// dtypes, positive batch and sequence within the token limit, a known fault.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fixtures/options.h"
#include "model/size_limits.h"

namespace {
const char* const kFlags[] = {"--gptbench_device=", "--gptbench_models=", "--gptbench_dtypes=",
                              "--gptbench_batch=",  "--gptbench_seq=",    "--gptbench_full=",
                              "--gptbench_flush_l2=", "--gptbench_gemm_search=", "--gptbench_fault=",
                              "--gptbench_help",    "--benchmark_filter="};
constexpr size_t kFlagCount = sizeof(kFlags) / sizeof(kFlags[0]);
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gptbench;
  std::vector<std::string> args = {"gptbench"};
  size_t start = 0;
  for (size_t i = 0; i <= size; ++i) {
    if (i < size && data[i] != 0) continue;
    if (i > start) {
      const uint8_t pick = data[start];
      const std::string value(reinterpret_cast<const char*>(data + start + 1), i - start - 1);
      args.push_back(pick == 0xff ? value : kFlags[pick % kFlagCount] + value);
    }
    start = i + 1;
  }
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  const bool cuda = size > 0 && (data[size - 1] & 1);
  const ParseResult r = parse_options(static_cast<int>(argv.size()), argv.data(), cuda);
  if (!r.error.empty() || r.help) return 0;
  const Options& o = r.options;
  if (o.batch <= 0 || o.seq <= 0 || o.models.empty() || o.dtypes.empty()) std::abort();
  if (o.tokens() > kMaxTokens) std::abort();
  if (o.on_cuda() && !cuda) std::abort();
  bool fault_known = false;
  for (const auto& f : fault_names()) fault_known = fault_known || f == o.fault;
  if (!fault_known) std::abort();
  for (const auto& d : o.dtypes) {
    bool known = false;
    for (const auto& n : all_dtype_names()) known = known || n == d;
    if (!known) std::abort();
  }
  return 0;
}
