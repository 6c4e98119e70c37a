// Reading train.early_stopping, an inline table { metric, patience, min_delta }, and
// checkpoint.keep_best (the metric that judges the job's best model), and what the rest
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

// checkpoint.keep_best = "eval_accuracy" | "eval_loss" into out->keep_best; its node, or null
// when absent or reported.
const toml::node* ReadKeepBest(TableReader& checkpoint, CheckpointConfig* out);
// The job held against a present checkpoint.keep_best (`node`: ReadKeepBest's): refused with
// model parallelism, with another metric than train.early_stopping's, and where early stopping
// would be refused.
void CheckKeepBest(const JobConfig& job, TableReader& checkpoint, const toml::node* node);
// `keep_best = "..."` in [checkpoint], when it is set.
void WriteKeepBest(const CheckpointConfig& checkpoint, TomlWriter& w);

// `early_stopping = { ... }` in [train], when it is on.
void WriteEarlyStopping(const train::EarlyStoppingOptions& options, TomlWriter& w);

}  // namespace dtrain::config::internal
