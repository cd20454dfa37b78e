#include "names.h"

#include <unordered_set>

namespace gptbench::runner {

std::vector<std::string> parse_benchmark_list(std::string_view text) {
  std::vector<std::string> names;
  std::unordered_set<std::string> seen;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.remove_suffix(1);
    // A NUL cannot be part of a name Google Benchmark prints (C strings) nor of a filter passed
    // through argv; such a line is noise (found by runner_fuzz_names: it made an invalid regex).
    const bool has_nul = line.find('\0') != std::string_view::npos;
    if (!line.empty() && !has_nul && seen.insert(std::string(line)).second) names.emplace_back(line);
    start = end + 1;
  }
  return names;
}

std::string family_of(std::string_view name) {
  return std::string(name.substr(0, name.find('/')));
}

std::vector<Family> group_families(const std::vector<std::string>& names) {
  std::vector<Family> families;
  for (const std::string& name : names) {
    const std::string family = family_of(name);
    Family* target = nullptr;
    for (Family& f : families)
      if (f.name == family) target = &f;
    if (target == nullptr) target = &families.emplace_back(Family{family, {}});
    target->benchmarks.push_back(name);
  }
  return families;
}

std::string escape_regex(std::string_view name) {
  // Only these: libstdc++'s POSIX extended syntax (what Google Benchmark compiles filters
  // with) rejects an escaped ']' or '}', which are ordinary characters outside brackets.
  static constexpr std::string_view kSpecial = ".[{()*+?^$|\\";
  std::string out;
  out.reserve(name.size() + 8);
  for (char c : name) {
    if (kSpecial.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string exact_filter(const std::vector<std::string>& names) {
  std::string out = "^(";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += '|';
    out += escape_regex(names[i]);
  }
  return out + ")$";
}

std::vector<std::vector<std::string>> chunk_for_filter(const std::vector<std::string>& names,
                                                       size_t max_names, size_t max_chars) {
  std::vector<std::vector<std::string>> chunks;
  size_t chars = 0;
  for (const std::string& name : names) {
    const size_t add = escape_regex(name).size() + 1;
    if (chunks.empty() || chunks.back().size() >= max_names ||
        (!chunks.back().empty() && chars + add + 4 > max_chars)) {
      chunks.emplace_back();
      chars = 0;
    }
    chunks.back().push_back(name);
    chars += add;
  }
  return chunks;
}

}  // namespace gptbench::runner
