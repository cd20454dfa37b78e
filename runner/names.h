// Benchmark names as gptbench lists them (--benchmark_list_tests), grouped into families (the
// first path segment: gemm/torch/fp32/... is family "gemm"), and the --benchmark_filter regex
// that selects exactly a list of names in a child run.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gptbench::runner {

struct Family {
  std::string name;                 // "gemm"
  std::vector<std::string> benchmarks;  // full names, in the order gptbench runs them
};

// One name per non-empty line (trailing '\r' and spaces dropped), in order; duplicates kept
// once; lines containing a NUL byte are dropped.
std::vector<std::string> parse_benchmark_list(std::string_view text);

// "gemm/torch/fp32/M:64" -> "gemm"; a name without '/' is its own family.
std::string family_of(std::string_view name);

// Families in order of first appearance, each with its names in listed order.
std::vector<Family> group_families(const std::vector<std::string>& names);

// The name with regex metacharacters (. [ { ( ) * + ? ^ $ | \) escaped; the result is
// literal in std::regex's extended and ECMAScript syntax (Google Benchmark 1.7 compiles
// filters with std::regex::extended, which rejects "\]" and "\}").
std::string escape_regex(std::string_view name);

// ^(a|b|...)$ over escaped names: selects exactly these names.
std::string exact_filter(const std::vector<std::string>& names);

// Splits names into consecutive chunks whose exact_filter stays under max_chars and
// max_names each (std::regex matches alternatives recursively; a long alternation can
// exhaust the stack), keeping the order. Every chunk holds at least one name.
std::vector<std::vector<std::string>> chunk_for_filter(const std::vector<std::string>& names,
                                                       size_t max_names, size_t max_chars);

}  // namespace gptbench::runner
