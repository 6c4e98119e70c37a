// Reading a sparse job's keys: [data] sparse and hash_bits, the [model] of a sparse model (type
// "logistic", "softmax" or "fm", and fm's factors), and what the rest of a job may ask of one.
// Internal to dtrain_config, like toml_reader.h.
//
//   ReadSparseData(data_reader, &job.data);             // before data.features is read
//   if (job.data.sparse) ReadSparseModel(model_reader, &job.sparse_model);
//   CheckSparseJob(job, {data, model, train, optimizer, cluster});
//
// A sparse job trains with an optimizer whose untouched coordinates cost nothing (sgd, adagrad,
// ftrl), in mode "single" or "async" (every step pulling and pushing, staleness unbounded), and
// nothing in it may touch every parameter at each step (weight decay, clipping by the global
// norm) or densify the rows (scaling, augmentation).
#pragma once

#include "config/job.h"
#include "config/toml_reader.h"
#include "config/toml_text.h"

namespace dtrain::config::internal {

// data.sparse and data.hash_bits; the format's own keys are ReadData's.
void ReadSparseData(TableReader& data, DataConfig* d);
// [model] of a sparse job: type and factors; every dense model key is refused with the reason.
void ReadSparseModel(TableReader& model, sparse::SparseModelSpec* m);

struct SparseReaders {
  TableReader& data;
  TableReader& model;
  TableReader& train;
  TableReader& optimizer;
  TableReader& cluster;
};
// The rest of the job held against data.sparse (and a sparse key without it).
void CheckSparseJob(const JobConfig& job, const SparseReaders& readers);

// The [model] section ReadSparseModel reads back.
void WriteSparseModel(const sparse::SparseModelSpec& m, TomlWriter& w);

}  // namespace dtrain::config::internal
