// Generates the realistic Google Benchmark 1.7.1 fixtures under
// tests/compare/data/ (see regenerate.sh): small CPU benchmarks named like the
// suite's (family/impl/dtype/Arg:value), with its counters and context keys,
// one manual-time benchmark and one that fails its correctness check.
// GPTBENCH_FIXTURE_SLOW=<name prefix>:<factor> makes matching benchmarks do
// `factor` times the work: the planted slowdown.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

double slowdown_for(const std::string& name) {
  const char* spec = std::getenv("GPTBENCH_FIXTURE_SLOW");
  if (spec == nullptr) return 1.0;
  const std::string text(spec);
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) return 1.0;
  return name.rfind(text.substr(0, colon), 0) == 0 ? std::atof(text.c_str() + colon + 1) : 1.0;
}

std::vector<float> random_vector(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

void softmax_rows(const std::vector<float>& in, std::vector<float>& out, int rows, int cols, bool fused) {
  for (int r = 0; r < rows; ++r) {
    const float* x = &in[static_cast<size_t>(r) * cols];
    float* y = &out[static_cast<size_t>(r) * cols];
    float m = x[0];
    for (int c = 1; c < cols; ++c) m = std::max(m, x[c]);
    float sum = 0;
    if (fused) {
      for (int c = 0; c < cols; ++c) sum += (y[c] = std::exp(x[c] - m));
    } else {
      for (int c = 0; c < cols; ++c) y[c] = std::exp(x[c] - m);
      for (int c = 0; c < cols; ++c) sum += y[c];
    }
    for (int c = 0; c < cols; ++c) y[c] /= sum;
  }
}

void softmax(benchmark::State& state, bool fused, double slowdown) {
  const int rows = static_cast<int>(state.range(0));
  const int cols = static_cast<int>(state.range(1));
  const auto in = random_vector(static_cast<size_t>(rows) * cols, 1);
  std::vector<float> out(in.size());
  const int extra_rows = static_cast<int>(rows * (slowdown - 1.0));
  for (auto _ : state) {
    softmax_rows(in, out, rows, cols, fused);
    if (extra_rows > 0) softmax_rows(in, out, extra_rows, cols, fused);
    benchmark::DoNotOptimize(out.data());
  }
  const double bytes = 2.0 * rows * cols * sizeof(float);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["bytes/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_mem_bytes"] = static_cast<double>((in.size() + out.size()) * sizeof(float));
}

void gemm(benchmark::State& state, int block, double slowdown) {
  const int n = static_cast<int>(state.range(0));
  const auto a = random_vector(static_cast<size_t>(n) * n, 2);
  const auto b = random_vector(static_cast<size_t>(n) * n, 3);
  std::vector<float> c(static_cast<size_t>(n) * n);
  const int passes = slowdown > 1.0 ? 2 : 1;
  const int partial = static_cast<int>(n * (slowdown - 1.0));
  for (auto _ : state) {
    for (int pass = 0; pass < passes; ++pass) {
      const int limit = pass == 0 ? n : partial;
      std::fill(c.begin(), c.end(), 0.f);
      for (int i0 = 0; i0 < limit; i0 += block)
        for (int k0 = 0; k0 < n; k0 += block)
          for (int i = i0; i < std::min(i0 + block, limit); ++i)
            for (int k = k0; k < std::min(k0 + block, n); ++k)
              for (int j = 0; j < n; ++j) c[i * n + j] += a[i * n + k] * b[k * n + j];
    }
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["%peak"] = benchmark::Counter(2.0 * n * n * n / 2e11, benchmark::Counter::kIsIterationInvariantRate);
}

void attention_manual(benchmark::State& state, double slowdown) {
  const int len = static_cast<int>(state.range(0));
  const int dim = static_cast<int>(state.range(1));
  const auto q = random_vector(static_cast<size_t>(len) * dim, 4);
  std::vector<float> scores(static_cast<size_t>(len) * len);
  const int rows = static_cast<int>(len * slowdown);
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < len; ++j) {
        float s = 0;
        for (int d = 0; d < dim; ++d) s += q[(i % len) * dim + d] * q[j * dim + d];
        scores[(i % len) * len + j] = s;
      }
    benchmark::DoNotOptimize(scores.data());
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  state.counters["tokens/s"] = benchmark::Counter(len, benchmark::Counter::kIsIterationInvariantRate);
}

void broken_optimizer(benchmark::State& state) {
  state.SkipWithError("wrong result: max abs error 3.2e-02 > 1e-03");
  for (auto _ : state) {
  }
}

void register_all() {
  for (const char* impl : {"naive", "fused"}) {
    const std::string name = std::string("softmax/") + impl + "/fp32";
    const bool fused = std::string(impl) == "fused";
    for (int cols : {256, 1024}) {
      const std::string full = name + "/rows:64/cols:" + std::to_string(cols);
      const double slow = slowdown_for(full);
      benchmark::RegisterBenchmark(name.c_str(), [fused, slow](benchmark::State& s) { softmax(s, fused, slow); })
          ->Args({64, cols})
          ->ArgNames({"rows", "cols"});
    }
  }
  for (const auto& [impl, block] : {std::pair<const char*, int>{"naive", 1024}, {"blocked", 16}}) {
    const std::string name = std::string("gemm/") + impl + "/fp32";
    const std::string full = name + "/M:48";
    const double slow = slowdown_for(full);
    const int b = block;
    benchmark::RegisterBenchmark(name.c_str(), [b, slow](benchmark::State& s) { gemm(s, b, slow); })
        ->Arg(48)
        ->ArgNames({"M"});
  }
  const std::string attention = "attention/scores/fp32";
  const double slow = slowdown_for(attention);
  benchmark::RegisterBenchmark(attention.c_str(), [slow](benchmark::State& s) { attention_manual(s, slow); })
      ->Args({64, 32})
      ->ArgNames({"L", "d"})
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("optim/adamw_check/fp32/model:tiny", broken_optimizer);
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::AddCustomContext("gpu_name", "none (CPU fixture)");
  benchmark::AddCustomContext("driver", "n/a");
  benchmark::AddCustomContext("cuda_runtime", "n/a");
  benchmark::AddCustomContext("libtorch", "2.11.0");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
