// The data checks of dtrain validate, submit and run: one function, so that the three refuse the
// same jobs. They read the files a job names as its workers will (core/data readers), in this
// process, which runs as the submitter: the daemon never opens a data file.
//
//   CliResult<CheckedData> data = CheckJobData(job);   // after config::LoadJobFile
//   if (!data.ok()) return Report(data.error());       // exit 2, naming the file and the problem
//
// Checked: every file the job reads (training and test, labels for idx) can be read in its format,
// the labels suit the model (integers for classification, no more classes than outputs), the test
// set has the training set's features, and the model fits the data's shape. A CSV label_column the
// header does not name is told with the header's columns and the near match (config/suggest.h):
// this process may show them, having opened the file with its reader's rights.
#pragma once

#include <optional>
#include <vector>

#include "cmd/cli_error.h"
#include "config/job.h"
#include "config/sweep_file.h"
#include "core/model/spec.h"
#include "daemon/runner/sparse_data.h"

namespace dtrain::cli {

// What the checks found: exactly one of the two is set.
struct CheckedData {
  std::optional<model::ModelSpec> spec;         // a dense job: its model resolved against the data
  std::optional<runner::SparseJobData> sparse;  // a sparse job: its data as the job reads it
};

CliResult<CheckedData> CheckJobData(const config::JobConfig& job);

// CheckJobData of every trial of a sweep (dtrain sweep run and submit), before any starts; false
// (the problem printed, naming the trial) at the first that fails.
bool CheckTrialsData(const std::vector<config::ResolvedTrial>& trials);

}  // namespace dtrain::cli
