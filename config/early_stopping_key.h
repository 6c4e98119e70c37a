// Reading train.early_stopping, an inline table { metric, patience, min_delta }, and what the rest
// of a job must be for it: held-out data to evaluate on, a classification model for
// eval_accuracy, and a trainer that judges its evaluations (the dense engine's). Internal to
// dtrain_config, like toml_reader.h.
//
//   const toml::node* early = ReadEarlyStopping(train_reader, sink, &job.train.early_stopping);
//   ...  // the model, data and optimizer read
//   CheckEarlyStopping(job, train_reader, early);
//
// Every refusal is reported at the key (or the inner key) with what is allowed.
#pragma once

#include "config/job.h"
#include "config/toml_reader.h"
#include "config/toml_text.h"

namespace dtrain::config::internal {

// The table's keys into `out` (patience >= 1 marks it on); its unknown keys are reported. The
// node of train.early_stopping, or null when absent or reported.
const toml::node* ReadEarlyStopping(TableReader& train, Sink& sink,
                                    train::EarlyStoppingOptions* out);

// The job held against a present train.early_stopping (`node`: ReadEarlyStopping's).
void CheckEarlyStopping(const JobConfig& job, TableReader& train, const toml::node* node);

// `early_stopping = { ... }` in [train], when it is on.
void WriteEarlyStopping(const train::EarlyStoppingOptions& options, TomlWriter& w);

}  // namespace dtrain::config::internal
