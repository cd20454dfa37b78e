#include "kernel_note.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <vector>

#include "runjson/kernels_label.h"

namespace gptbench::compare {
namespace {

using KernelSet = std::set<std::string>;

// The distinct kernel sets of one side's processes (labels listing the same kernels in another
// order are one set).
std::vector<KernelSet> kernel_lists(const runjson::Benchmark* b) {
  std::vector<KernelSet> out;
  if (b == nullptr) return out;
  for (const std::string& label : b->labels) {
    const auto names = runjson::parse_kernels_label(label);
    KernelSet set(names.begin(), names.end());
    if (!set.empty() && std::find(out.begin(), out.end(), set) == out.end()) out.push_back(std::move(set));
  }
  return out;
}

KernelSet union_of(const std::vector<KernelSet>& lists) {
  KernelSet all;
  for (const KernelSet& l : lists) all.insert(l.begin(), l.end());
  return all;
}

std::string joined(const KernelSet& names, const char* sep = ", ") {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : sep) + n;
  return out;
}

KernelSet minus(const KernelSet& a, const KernelSet& b) {
  KernelSet out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::inserter(out, out.end()));
  return out;
}

// "base A | B": the names that not every process of the side launched, per process list.
std::string process_difference(const std::vector<KernelSet>& lists, const std::string& label) {
  if (lists.size() < 2) return "";
  KernelSet common = lists.front();
  for (const KernelSet& l : lists) {
    KernelSet kept;
    std::set_intersection(common.begin(), common.end(), l.begin(), l.end(), std::inserter(kept, kept.end()));
    common = std::move(kept);
  }
  std::string out;
  for (const KernelSet& l : lists) {
    const KernelSet own = minus(l, common);
    out += (out.empty() ? label + " " : " | ") + (own.empty() ? std::string("(none of its own)") : joined(own));
  }
  return out;
}

}  // namespace

std::string kernel_note(const runjson::Benchmark* base, const runjson::Benchmark* contender) {
  const std::string base_label = "base", new_label = "new";
  const auto b = kernel_lists(base), n = kernel_lists(contender);
  if (b.empty() && n.empty()) return "";
  const KernelSet bu = union_of(b), nu = union_of(n);
  if (!b.empty() && !n.empty() && bu != nu) {
    const KernelSet bo = minus(bu, nu), no = minus(nu, bu);
    std::string note = "kernels differ:";
    if (!bo.empty()) note += " " + base_label + " only " + joined(bo);
    if (!no.empty()) note += std::string(bo.empty() ? " " : "; ") + new_label + " only " + joined(no);
    return note;
  }
  std::string note;
  for (const auto& [lists, label] : {std::pair{&b, &base_label}, std::pair{&n, &new_label}}) {
    const std::string d = process_difference(*lists, *label);
    if (!d.empty()) note += (note.empty() ? "processes differ in kernels: " : "; ") + d;
  }
  return note;
}

void add_kernel_notes(Report& report, const Pairing& pairing) {
  std::map<std::string, const BenchmarkPair*> by_name;
  for (const BenchmarkPair& pair : pairing.pairs) by_name[pair.name] = &pair;
  for (PairResult& result : report.results)
    if (const auto it = by_name.find(result.name); it != by_name.end())
      result.kernel_note = kernel_note(it->second->base, it->second->contender);
}

}  // namespace gptbench::compare
