// Reading [sweep.parameters] of a sweep file (sweep_file.cc): each key a dotted job key, quoted
// ("optimizer.lr") or as TOML dotted keys (optimizer.lr), each value a table with exactly one of
// values, uniform, log_uniform and int (sweep_trials.h's SweepParameter). Internal to
// dtrain_config, like toml_reader.h.
//
//   std::deque<TableReader> readers;  // one per parameter table, for RejectUnknown
//   std::vector<ReadParameter> read;
//   ReadParameters(*parameters_table, "", readers, sink, &read);
//
// A table without any of the four kinds is a level of dotted keys; a mistyped kind within a
// parameter's table is told with the near one. Every problem is reported to the sink at its
// place; a parameter with one is left out of the result.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "config/sweep_trials.h"
#include "config/toml_reader.h"

namespace dtrain::config::internal {

// A parameter as read, with the place of its key in the sweep file.
struct ReadParameter {
  SweepParameter parameter;
  int line = 0, column = 0;
};

// A value, or an array of values, as TOML and JSON text; floats as their shortest text.
ParameterValue ValueOf(const toml::node& node);

// Every parameter under `table` (sweep.parameters, or a table of dotted keys within it), its
// key prefixed with `prefix` ("" at the top).
void ReadParameters(const toml::table& table, const std::string& prefix,
                    std::deque<TableReader>& readers, Sink& sink, std::vector<ReadParameter>* out);

}  // namespace dtrain::config::internal
