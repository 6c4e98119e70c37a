// LbfgsEngine: where an L-BFGS run's vectors live and its objective is evaluated — in this
// process (LocalLbfgsEngine: `mode = "single"`) or on Sandblaster's shards and workers
// (daemon/runner/sandblaster_run.h) — as RunLbfgs (lbfgs_run.h) needs it: the vectors L-BFGS
// operates on, a local copy of those a checkpoint or an evaluation reads, and what the newest
// objective evaluation measured.
//
//   LocalLbfgsEngine engine(job, data, model);
//   RunLbfgs(job, data, engine, recorder, options, resume);
//
// Staging(): vectors laid out as L-BFGS's (optim::LbfgsVectorCount); Collect brings x (and with
// `history` also g and the history) into it, Publish sends them from it to where the vectors live.
// For the local engine Staging() is the vectors themselves and both are no-ops. One thread.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "config/job.h"
#include "core/model/model.h"
#include "core/optim/lbfgs.h"
#include "core/optim/vector_slices.h"
#include "core/train/batch_objective.h"
#include "core/train/metrics.h"
#include "daemon/runner/job_data.h"

namespace dtrain::runner {

class LbfgsEngine {
 public:
  virtual ~LbfgsEngine() = default;
  virtual optim::LbfgsVectors& vectors() = 0;
  virtual optim::VectorSlices& Staging() = 0;
  virtual Status Collect(bool history) = 0;
  virtual Status Publish(bool history) = 0;
  // The loss sum and correct rows at the newest evaluated point (L-BFGS's accepted one), over
  // rows() rows.
  virtual model::LossValue LastLoss() const = 0;
  virtual std::size_t rows() const = 0;
  // The iteration's own metrics beyond L-BFGS's (Sandblaster: units per worker, backups), named
  // and valued; taken (reset) by the call.
  virtual std::vector<std::pair<std::string, double>> TakeIterationMetrics() { return {}; }
  // What happened that the job's log should say (a worker lost), taken by the call.
  virtual std::vector<std::string> TakeEvents() { return {}; }
};

// The objective over the job's training rows (or its sample) in this process.
class LocalLbfgsEngine final : public LbfgsEngine {
 public:
  // `data` and `model` must outlive the engine.
  LocalLbfgsEngine(const config::JobConfig& job, const JobData& data, const model::Model& model);

  optim::LbfgsVectors& vectors() override { return vectors_; }
  optim::VectorSlices& Staging() override { return vectors_.slices(); }
  Status Collect(bool) override { return Status::Ok(); }
  Status Publish(bool) override { return Status::Ok(); }
  model::LossValue LastLoss() const override { return objective_.last(); }
  std::size_t rows() const override { return objective_.rows(); }

 private:
  train::BatchObjective objective_;
  optim::LocalVectors vectors_;
};

}  // namespace dtrain::runner
