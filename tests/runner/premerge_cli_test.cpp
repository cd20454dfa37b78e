// gptbench-premerge's command line, CPU lists and progress lines.
#include "premerge_cli.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cpu_list.h"
#include "premerge_progress.h"

namespace gptbench::runner {
namespace {

PremergeCliResult parse(std::vector<std::string> args) {
  args.insert(args.begin(), "gptbench-premerge");
  return parse_premerge_cli(args);
}

const std::vector<std::string> kRequired = {"--base-bin", "a", "--new-bin", "b", "--out", "dir"};

std::vector<std::string> with_required(std::vector<std::string> extra) {
  std::vector<std::string> args = kRequired;
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(PremergeCli, Defaults) {
  const PremergeCliResult r = parse(kRequired);
  ASSERT_EQ(r.error, "");
  const PremergeConfig& c = r.config;
  EXPECT_EQ(c.base_bin, "a");
  EXPECT_EQ(c.new_bin, "b");
  EXPECT_EQ(c.out_dir, "dir");
  EXPECT_EQ(c.filter, "");
  EXPECT_DOUBLE_EQ(c.thresholds.default_threshold(), 0.02);
  EXPECT_DOUBLE_EQ(c.alpha, 0.05);
  EXPECT_EQ(c.processes, 3u);
  EXPECT_EQ(c.min_samples, 5u);
  EXPECT_EQ(c.max_samples, 30u);
  EXPECT_DOUBLE_EQ(c.sample_time_s, 0.01);
  EXPECT_DOUBLE_EQ(c.max_seconds, 10);
  EXPECT_DOUBLE_EQ(c.timeout_s, 120);
  EXPECT_FALSE(c.seed.has_value());
  EXPECT_TRUE(c.cpus.empty());
}

TEST(PremergeCli, EveryOption) {
  const PremergeCliResult r =
      parse(with_required({"--filter", "^gemm/", "--worker-arg=--gptbench_device=cpu", "--worker-arg",
                           "--gptbench_verify=false", "--base-arg", "--x=1", "--new-arg=--gptbench_slowdown=^gemm/:3",
                           "--threshold", "3%", "--alpha", "0.01", "--min-samples", "6", "--max-samples", "12",
                           "--sample-time", "0.02", "--max-seconds", "4", "--timeout", "30", "--seed", "17",
                           "--cpus", "0-2,5", "--processes", "4"}));
  ASSERT_EQ(r.error, "");
  const PremergeConfig& c = r.config;
  EXPECT_EQ(c.filter, "^gemm/");
  EXPECT_EQ(c.worker_args, (std::vector<std::string>{"--gptbench_device=cpu", "--gptbench_verify=false"}));
  EXPECT_EQ(c.base_args, (std::vector<std::string>{"--x=1"}));
  EXPECT_EQ(c.new_args, (std::vector<std::string>{"--gptbench_slowdown=^gemm/:3"}));
  EXPECT_DOUBLE_EQ(c.thresholds.default_threshold(), 0.03);
  EXPECT_DOUBLE_EQ(c.alpha, 0.01);
  EXPECT_EQ(c.processes, 4u);
  EXPECT_EQ(c.min_samples, 6u);
  EXPECT_EQ(c.max_samples, 12u);
  EXPECT_DOUBLE_EQ(c.sample_time_s, 0.02);
  EXPECT_DOUBLE_EQ(c.max_seconds, 4);
  EXPECT_DOUBLE_EQ(c.timeout_s, 30);
  EXPECT_EQ(c.seed, 17u);
  EXPECT_EQ(c.cpus, (std::vector<int>{0, 1, 2, 5}));
  EXPECT_EQ(worker_argv(c, Side::kNew),
            (std::vector<std::string>{"b", "--gptbench_worker=true", "--gptbench_device=cpu",
                                      "--gptbench_verify=false", "--gptbench_slowdown=^gemm/:3"}));
  EXPECT_EQ(worker_argv(c, Side::kBase),
            (std::vector<std::string>{"a", "--gptbench_worker=true", "--gptbench_device=cpu",
                                      "--gptbench_verify=false", "--x=1"}));
}

TEST(PremergeCli, ConfigFileThresholdsAndAnExplicitThresholdOverridesItsDefault) {
  const std::string path = std::filesystem::temp_directory_path() / ("premerge_cli_" + std::to_string(::getpid()) + ".ini");
  std::ofstream(path) << "* = 4%\nmodel/ = 10%\n";
  PremergeCliResult r = parse(with_required({"--config", path}));
  ASSERT_EQ(r.error, "");
  EXPECT_DOUBLE_EQ(r.config.thresholds.for_name("gemm/x"), 0.04);
  EXPECT_DOUBLE_EQ(r.config.thresholds.for_name("model/fwd"), 0.10);
  r = parse(with_required({"--config", path, "--threshold", "0.01"}));
  ASSERT_EQ(r.error, "");
  EXPECT_DOUBLE_EQ(r.config.thresholds.for_name("gemm/x"), 0.01);
  EXPECT_DOUBLE_EQ(r.config.thresholds.for_name("model/fwd"), 0.10);
  std::filesystem::remove(path);
}

TEST(PremergeCli, UsageErrors) {
  EXPECT_NE(parse({"--base-bin", "a", "--out", "d"}).error, "");                      // no --new-bin
  EXPECT_NE(parse(with_required({"--threshold", "lots"})).error, "");
  EXPECT_NE(parse(with_required({"--min-samples", "1"})).error, "");                  // the U test needs 2
  EXPECT_NE(parse(with_required({"--min-samples", "8", "--max-samples", "6"})).error, "");
  EXPECT_NE(parse(with_required({"--alpha", "2"})).error, "");
  EXPECT_NE(parse(with_required({"--processes", "0"})).error, "");
  EXPECT_NE(parse(with_required({"--timeout", "0"})).error, "");
  EXPECT_NE(parse(with_required({"--cpus", "3-1"})).error, "");
  EXPECT_NE(parse(with_required({"--config", "/nonexistent/premerge.ini"})).error, "");
  EXPECT_NE(parse(with_required({"--bogus"})).error, "");
  EXPECT_NE(parse({"--help"}).help, "");
}

TEST(CpuList, ParsesRangesAndLists) {
  EXPECT_EQ(parse_cpu_list("0-3"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(parse_cpu_list("5,0-1,1"), (std::vector<int>{0, 1, 5}));
  EXPECT_EQ(parse_cpu_list("7"), (std::vector<int>{7}));
  for (const char* bad : {"", "a", "1-", "-1", "3-1", "1,,2", "1.5", "99999"})
    EXPECT_THROW(parse_cpu_list(bad), std::invalid_argument) << bad;
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 6, 8, 9}), "0-3,6,8-9");
  EXPECT_EQ(format_cpu_list({}), "");
}

TEST(PremergeProgress, BenchmarkLine) {
  BenchmarkLine l;
  l.position = 3;
  l.total = 12;
  l.name = "gemm/torch/bf16/x";
  l.base_samples = 12;
  l.new_samples = 12;
  l.change = 0.004;
  l.uncertainty = 0.003;
  l.status = "decided-same";
  l.elapsed_s = 42;
  l.eta_s = 70;
  EXPECT_EQ(format_benchmark_line(l),
            "[ 3/12] gemm/torch/bf16/x  n=12/12  change +0.4% \u00b10.3%  decided-same  (elapsed 0:42, ETA 1:10)");
  l.new_samples.reset();
  l.change.reset();
  l.eta_s.reset();
  l.status = "one-side";
  EXPECT_EQ(format_benchmark_line(l), "[ 3/12] gemm/torch/bf16/x  n=12/-  change n/a  one-side  (elapsed 0:42)");
  l.epoch = 2;
  l.epochs = 3;
  l.status = "epoch-done";
  EXPECT_EQ(format_benchmark_line(l),
            "[ 3/12] gemm/torch/bf16/x  epoch 2/3  n=12/-  change n/a  epoch-done  (elapsed 0:42)");
  l.epochs = 1;  // one epoch: not shown
  EXPECT_EQ(format_benchmark_line(l), "[ 3/12] gemm/torch/bf16/x  n=12/-  change n/a  epoch-done  (elapsed 0:42)");
  EXPECT_EQ(estimate_left(3, 12, 30), 90.0);
  EXPECT_FALSE(estimate_left(0, 12, 30).has_value());
}

}  // namespace
}  // namespace gptbench::runner
