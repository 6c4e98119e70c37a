// A resolved job file's settings as dotted keys ("optimizer.lr" = 0.01), and the keys in which
// several jobs' settings differ: what `dtrain compare` shows beside the jobs' metrics.
//
//   Result<JobSettings> a = FlattenJobText(spec_toml_a), b = FlattenJobText(spec_toml_b);
//   for (const auto& [key, values] : DifferingSettings({{a.value(), b.value()}})) ...
//
// Tables become levels of the key, and so does each table of an array of tables, by its index
// ("model.layers.1.units"); any other array is one value ("model.hidden" = [256, 128]). Values
// compare by their TOML text, which the resolved job file writes one way for one value. Pure
// functions: safe for concurrent use; no exception escapes but allocation failure.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/sweep_trials.h"
#include "core/status.h"

namespace dtrain::config {

using JobSettings = std::map<std::string, ParameterValue>;  // dotted key -> value

// Every key of the TOML text with its value; an error naming `source` for text that is not TOML.
Result<JobSettings> FlattenJobText(std::string_view text, std::string_view source);

// The keys whose values are not the same in every one of `jobs`, each with its value per job in
// their order; a job without the key has nullopt there (a key some jobs lack always differs).
std::map<std::string, std::vector<std::optional<ParameterValue>>> DifferingSettings(
    std::span<const JobSettings> jobs);

}  // namespace dtrain::config
