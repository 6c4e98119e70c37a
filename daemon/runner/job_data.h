// JobData: what a job file's [data] and [model] sections resolve to at run time — the training
// set, the held-out set, the feature scaling, and the model spec with inputs/outputs filled in
// from the data.
//
//   Result<JobData> d = LoadJobData(job);
//   model::Model m(d.value().spec);
//
// The held-out set is the test file when the job names one, else a validation split of the
// training data (data.validation_fraction), else none. Scaling statistics come from the
// training rows only. Plain values; LoadJobData and ResolveJobShape are safe for concurrent use.
#pragma once

#include <string>

#include "config/job.h"
#include "core/data/dataset.h"
#include "core/data/readers.h"
#include "core/model/spec.h"
#include "core/status.h"

namespace dtrain::runner {

struct JobData {
  data::Dataset train;
  data::Dataset eval;     // rows == 0: nothing to evaluate on
  std::string eval_name;  // "test", "validation" or "" (none)
  data::Scaling scaling;
  model::ModelSpec spec;  // inputs and outputs resolved
};

Result<JobData> LoadJobData(const config::JobConfig& job);

// Reads one data set in the job's format (paths given explicitly: the job's test set, or a
// file named on the command line). `labels_path` is used by idx and npy only; `classification` says
// whether labels are class indices (else regression targets).
Result<data::Dataset> ReadJobDataset(const config::DataConfig& data, const std::string& path,
                                     const std::string& labels_path, bool classification);

// The job's spec with inputs/outputs taken from the training data's shape where the job left
// them 0, checked against it (feature count, number of classes). A layer that does not fit the
// shape the data gave is said at its place in the job file, as the job file's own check says it
// where input_shape is written out.
Result<model::ModelSpec> ResolveModelShape(const config::JobConfig& job,
                                           const data::DatasetShape& train);

// LoadJobData(job).value().spec, reading as little as it can (for a parameter-server shard, which
// needs only the model's shape): nothing when the job sets both model.inputs and model.outputs
// (then only the spec itself is checked) or uses synthetic data; the header and the labels for
// idx; the whole training file for csv and libsvm. The test set is never read, so the checks
// that involve it are LoadJobData's alone.
Result<model::ModelSpec> ResolveJobShape(const config::JobConfig& job);

// Everything LoadJobData checks, reading as little as it can: the shape of the training file and
// of the test file (the header and the labels for idx; the whole file for csv and libsvm), held
// against each other (the same feature count, labels the model can take) and against the model.
// Returns the spec LoadJobData would. What dtrain validate, submit and run check before a job
// is queued or run.
Result<model::ModelSpec> CheckJobShapes(const config::JobConfig& job);

}  // namespace dtrain::runner
