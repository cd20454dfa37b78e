#include "runjson/merge.h"

#include <unordered_map>

#include "runjson/load.h"

namespace gptbench::runjson {

using nlohmann::json;

nlohmann::json merge_runs(const std::vector<NamedText>& inputs) {
  if (inputs.empty()) throw LoadError("merge: no input files");
  json context = json::object();
  std::vector<std::string> order;
  std::unordered_map<std::string, std::vector<json>> rows_by_name;
  for (const NamedText& input : inputs) {
    json document;
    (void)parse_run(input.text, input.source, document);  // validates; throws LoadError
    if (&input == &inputs.front() && document.contains("context")) context = document["context"];
    for (json& row : document["benchmarks"]) {
      if (row.value("run_type", "iteration") == "aggregate") continue;
      const std::string name = row.contains("run_name") ? row["run_name"].get<std::string>() : row["name"].get<std::string>();
      auto [it, inserted] = rows_by_name.try_emplace(name);
      if (inserted) order.push_back(name);
      row["repetition_index"] = it->second.size();
      it->second.push_back(std::move(row));
    }
  }
  json benchmarks = json::array();
  for (const std::string& name : order) {
    std::vector<json>& rows = rows_by_name[name];
    for (json& row : rows) {
      row["repetitions"] = rows.size();
      benchmarks.push_back(std::move(row));
    }
  }
  return json{{"context", std::move(context)}, {"benchmarks", std::move(benchmarks)}};
}

nlohmann::json merge_run_files(const std::vector<std::string>& paths) {
  std::vector<NamedText> inputs;
  inputs.reserve(paths.size());
  for (const std::string& path : paths) inputs.push_back(NamedText{path, read_text_file(path)});
  return merge_runs(inputs);
}

}  // namespace gptbench::runjson
