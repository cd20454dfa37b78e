#include "merge.h"

#include <stdexcept>
#include <unordered_map>

#include "runjson/load.h"

namespace gptbench::runner {

using nlohmann::json;

void MergedRun::offer_context(const json& context) {
  if (have_context_ || !context.is_object()) return;
  context_ = context;
  have_context_ = true;
}

void MergedRun::add_child_rows(std::vector<json> rows) {
  std::unordered_map<int64_t, int64_t> renumber;
  for (json& row : rows) {
    if (auto it = row.find("family_index"); it != row.end() && it->is_number_integer()) {
      auto [pos, inserted] = renumber.try_emplace(it->get<int64_t>(), next_family_index_);
      if (inserted) ++next_family_index_;
      *it = pos->second;
    }
    rows_.push_back(std::move(row));
  }
}

void MergedRun::add_errored(const std::string& name, const std::string& message) {
  rows_.push_back(errored_row(name, message, next_family_index_++));
}

json errored_row(const std::string& name, const std::string& message, int64_t family_index,
                 int64_t per_family_instance_index) {
  return json{{"name", name},
              {"family_index", family_index},
              {"per_family_instance_index", per_family_instance_index},
              {"run_name", name},
              {"run_type", "iteration"},
              {"repetitions", 1},
              {"repetition_index", 0},
              {"threads", 1},
              {"error_occurred", true},
              {"error_message", message},
              {"iterations", 0},
              {"real_time", 0.0},
              {"cpu_time", 0.0},
              {"time_unit", "ns"}};
}

void MergedRun::set_context_entry(const std::string& key, const std::string& value) {
  extra_[key] = value;
}

json MergedRun::document() const {
  json context = context_;
  for (const auto& [key, value] : extra_) context[key] = value;
  return json{{"context", std::move(context)}, {"benchmarks", rows_}};
}

std::string MergedRun::text() const {
  // Replace invalid UTF-8 (a crash reason quotes the child's stderr) rather than throw.
  std::string out = document().dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  if (std::string problem = validate_gb_json(out, "merged result"); !problem.empty())
    throw std::runtime_error("internal error: the merged result does not load: " + problem);
  return out;
}

std::string validate_gb_json(const std::string& text, const std::string& source) {
  try {
    (void)runjson::parse_run(text, source);
  } catch (const runjson::LoadError& e) {
    return e.what();
  }
  return "";
}

}  // namespace gptbench::runner
