// TrainingSession: the model, strategy and trainer of one replica of a job, built from its job
// file and data — the same for `dtrain run` and a daemon's worker process.
//
//   auto session = MakeTrainingSession(job, data);   // sets the BLAS thread count too
//   session->trainer.InitParams();                    // or RestoreCheckpoint(c, session->trainer)
//
// The session refers to `data`, which must outlive it. One thread at a time.
#pragma once

#include <memory>

#include "config/job.h"
#include "core/model/model.h"
#include "core/train/strategy.h"
#include "core/train/trainer.h"
#include "daemon/runner/job_data.h"

namespace dtrain::runner {

struct TrainingSession {
  TrainingSession(const config::JobConfig& job, const JobData& data);
  model::Model model;
  train::LocalStrategy strategy;
  train::Trainer trainer;
};

std::unique_ptr<TrainingSession> MakeTrainingSession(const config::JobConfig& job,
                                                     const JobData& data);

}  // namespace dtrain::runner
