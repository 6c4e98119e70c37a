// The plain-text progress lines of a training run — what `dtrain run` prints when not on a TTY
// and what a daemon's worker prints into its job's log:
//   training: 60000 training rows, 235146 parameters (mlp inputs=784 ...), 4690 steps planned,
//     2 BLAS threads
//   training: 90000 training rows, 1000000 feature keys x 9 parameters (made as the rows touch
//     them; 1 so far) (sparse:fm ...; ftrl alpha=0.05 beta=1 l1=0.001 l2=0), 5400 steps planned, ...
//   step 469 epoch 1.00 test loss 0.4326 accuracy 0.8459
//   step 900 epoch 1.00 test loss 0.4402 accuracy 0.8012 auc 0.8119        (a binary sparse model)
//   iteration 12 evaluations 14 test loss 0.4512 accuracy 0.8402     (L-BFGS)
//
// Pure functions: safe for concurrent use.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "daemon/runner/job_data.h"
#include "daemon/runner/recorded_training.h"

namespace dtrain::runner {

std::string StartLine(const RunProgress& progress, const RunSubject& subject, bool resumed);

// The evaluation line, when `points` hold an evaluation; nullopt otherwise.
std::optional<std::string> EvalLine(const RunProgress& progress,
                                    std::span<const train::MetricPoint> points,
                                    const std::string& eval_name);

}  // namespace dtrain::runner
