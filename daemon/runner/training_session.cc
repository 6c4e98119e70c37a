#include "daemon/runner/training_session.h"

#include "core/math/gemm.h"
#include "core/optim/optimizer.h"

namespace dtrain::runner {

TrainingSession::TrainingSession(const config::JobConfig& job, const JobData& data)
    : model(data.spec),
      strategy(optim::MakeOptimizer(job.optimizer, 0, model.NumParams()), job.clip_norm),
      trainer(model, job.train, data.train, data.eval.rows > 0 ? &data.eval : nullptr,
              data.scaling, strategy) {}

std::unique_ptr<TrainingSession> MakeTrainingSession(const config::JobConfig& job,
                                                     const JobData& data) {
  math::SetBlasThreads(job.threads);
  return std::make_unique<TrainingSession>(job, data);
}

}  // namespace dtrain::runner
