#include "config/job_settings.h"

#include "config/sweep_parameters.h"
#include "config/toml_reader.h"

namespace dtrain::config {
namespace {

void Flatten(const toml::table& table, const std::string& prefix, JobSettings* out);

// An array of tables ([[model.layers]]): each table a level of its own, numbered from 0.
bool FlattenTables(const toml::node& node, const std::string& dotted, JobSettings* out) {
  const toml::array* array = node.as_array();
  if (array == nullptr || array->empty() || !array->is_array_of_tables()) return false;
  for (std::size_t i = 0; i < array->size(); ++i) {
    Flatten(*(*array)[i].as_table(), dotted + "." + std::to_string(i) + ".", out);
  }
  return true;
}

void Flatten(const toml::table& table, const std::string& prefix, JobSettings* out) {
  for (const auto& [key, node] : table) {
    const std::string dotted = prefix + std::string(key.str());
    if (const toml::table* inner = node.as_table()) {
      Flatten(*inner, dotted + ".", out);
    } else if (!FlattenTables(node, dotted, out)) {
      (*out)[dotted] = internal::ValueOf(node);
    }
  }
}

}  // namespace

Result<JobSettings> FlattenJobText(std::string_view text, std::string_view source) {
  internal::SyntaxError error;
  const std::optional<toml::table> root = internal::ParseToml(text, source, &error);
  if (!root) {
    return Status::Error(std::string(source) + ":" + std::to_string(error.line) + ":" +
                         std::to_string(error.column) + ": " + error.description);
  }
  JobSettings settings;
  Flatten(*root, "", &settings);
  return settings;
}

std::map<std::string, std::vector<std::optional<ParameterValue>>> DifferingSettings(
    std::span<const JobSettings> jobs) {
  std::map<std::string, std::vector<std::optional<ParameterValue>>> differing;
  for (const JobSettings& job : jobs) {
    for (const auto& entry : job) differing.try_emplace(entry.first);
  }
  for (auto it = differing.begin(); it != differing.end();) {
    std::vector<std::optional<ParameterValue>>& values = it->second;
    for (const JobSettings& job : jobs) {
      const auto found = job.find(it->first);
      values.push_back(found == job.end() ? std::nullopt : std::optional(found->second));
    }
    bool all_equal = true;
    for (const std::optional<ParameterValue>& v : values) {
      all_equal = all_equal && v.has_value() && v->toml == values.front()->toml;
    }
    it = all_equal ? differing.erase(it) : std::next(it);
  }
  return differing;
}

}  // namespace dtrain::config
