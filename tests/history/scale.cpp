// The history tool's own benchmark (docs/history.md, "Scale"):
//   history_scale [BENCHMARKS REPETITIONS RUNS TREND_BENCHMARKS]   defaults 10000 10 500 1000
// times `add` of one BENCHMARKS x REPETITIONS run from JSON (the CLI path: load, then one
// transaction) and `trend '.*'` over RUNS runs of TREND_BENCHMARKS benchmarks.
#include <iostream>
#include <string>

#include <chrono>

#include "database.h"
#include "series.h"
#include "trend_html.h"
#include "store.h"
#include "synthetic.h"

using namespace gptbench::history;

namespace {

double seconds_of_cli(const std::vector<std::string>& args) {
  const testing::CliResult result = testing::run_history(args);
  if (result.code != 0) {
    std::cerr << "failed (" << result.code << "): " << result.err;
    std::exit(1);
  }
  return result.seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t benchmarks = argc > 1 ? std::stoul(argv[1]) : 10000;
  const size_t repetitions = argc > 2 ? std::stoul(argv[2]) : 10;
  const size_t runs = argc > 3 ? std::stoul(argv[3]) : 500;
  const size_t trend_benchmarks = argc > 4 ? std::stoul(argv[4]) : 1000;
  testing::TempDir dir;

  testing::RunSpec big;
  big.benchmarks = benchmarks;
  big.repetitions = repetitions;
  const std::string json = testing::write_run(testing::make_run(big), dir.file("big.json"));
  const double add_s = seconds_of_cli({"--db", dir.file("add.sqlite"), "add", json, "--commit", "c", "--branch", "b"});
  std::cout << "add " << benchmarks << " benchmarks x " << repetitions << " repetitions: " << add_s << " s\n";

  {
    Database db(dir.file("trend.sqlite"), Database::Mode::kCreate);
    for (size_t r = 0; r < runs; ++r) {
      testing::RunSpec spec;
      spec.benchmarks = trend_benchmarks;
      spec.repetitions = repetitions;
      spec.seed = static_cast<unsigned>(r + 1);
      spec.date = testing::date_of(static_cast<int>(r / 10), static_cast<int>(r % 10));
      add_run(db, testing::make_run(spec), AddOptions{"commit" + std::to_string(r), "main", ""});
    }
  }
  const double trend_s = seconds_of_cli({"--db", dir.file("trend.sqlite"), "trend", ".*", "--html", dir.file("t.html")});
  std::cout << "trend over " << runs << " runs x " << trend_benchmarks << " benchmarks: " << trend_s << " s\n";
  // Where that time goes: reading the series and finding steps, then drawing the page.
  Database db(dir.file("trend.sqlite"), Database::Mode::kExisting);
  const auto start = std::chrono::steady_clock::now();
  const History history = load_history(db, gptbench::compare::NameFilter(".*"));
  const auto loaded = std::chrono::steady_clock::now();
  const std::string page = render_trend_html(history, TrendPage{});
  const auto drawn = std::chrono::steady_clock::now();
  std::cout << "  of which series and steps " << std::chrono::duration<double>(loaded - start).count()
            << " s, page " << std::chrono::duration<double>(drawn - loaded).count() << " s (" << page.size() / 1e6
            << " MB)\n";
  return 0;
}
