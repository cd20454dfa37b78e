// gptbench-report: Google Benchmark JSON runs of the training families into one
// self-contained HTML page with inline SVG charts (report.h).
//   gptbench-report RUN.json [RUN.json ...] -o report.html [--baseline NAME] [--title TEXT]
// Exit codes: 0 written, 1 an input could not be loaded or the output written, 2 usage.
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "runjson/load.h"
#include "report.h"

int main(int argc, char** argv) {
  using namespace gptbench;
  std::vector<std::string> inputs;
  std::string output;
  report::ReportOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "gptbench-report: " << flag << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-o" || a == "--output") {
      output = value("-o");
    } else if (a == "--baseline") {
      options.baseline = value("--baseline");
    } else if (a == "--title") {
      options.title = value("--title");
    } else if (a == "-h" || a == "--help") {
      std::cout << "usage: gptbench-report RUN.json [RUN.json ...] -o report.html "
                   "[--baseline NAME|SUBSTRING] [--title TEXT]\n";
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "gptbench-report: unknown flag " << a << " (see --help)\n";
      return 2;
    } else {
      inputs.push_back(a);
    }
  }
  if (inputs.empty() || output.empty()) {
    std::cerr << "usage: gptbench-report RUN.json [RUN.json ...] -o report.html "
                 "[--baseline NAME|SUBSTRING] [--title TEXT]\n";
    return 2;
  }
  std::vector<runjson::Run> runs;
  try {
    for (const auto& path : inputs) runs.push_back(runjson::load_run_file(path));
  } catch (const std::exception& e) {
    std::cerr << "gptbench-report: " << e.what() << "\n";
    return 1;
  }
  const auto collected = report::collect(runs);
  std::ofstream out(output, std::ios::binary);
  out << report::render_report(collected, options);
  if (!out) {
    std::cerr << "gptbench-report: cannot write " << output << "\n";
    return 1;
  }
  std::cerr << "gptbench-report: " << collected.entries.size() << " benchmarks ("
            << collected.skipped.size() << " skipped) -> " << output << "\n";
  return 0;
}
