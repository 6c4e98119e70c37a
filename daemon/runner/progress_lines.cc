#include "daemon/runner/progress_lines.h"

#include <cstdio>

#include "config/thread_layout.h"
#include "core/math/gemm.h"

namespace dtrain::runner {
namespace {

// The threads of the run's passes: its batch slices, or else its BLAS threads.
std::string ThreadsText(const RunProgress& progress) {
  const bool split = progress.batch_slices > 1;
  return config::ThreadLayout{split ? progress.batch_slices : math::BlasThreads(), split, {}}
      .Describe();
}

}  // namespace

std::string StartLine(const RunProgress& progress, const RunSubject& subject, bool resumed) {
  char line[192];
  if (progress.feature_keys > 0) {  // sparse: parameters are made as the rows touch keys
    std::snprintf(line, sizeof line,
                  " %zu training rows, %llu feature keys x %zu parameters (made as the rows touch "
                  "them; %zu so far) (",
                  subject.train_rows, static_cast<unsigned long long>(progress.feature_keys),
                  progress.params_per_key, progress.params);
  } else {
    std::snprintf(line, sizeof line, " %zu training rows, %zu parameters (", subject.train_rows,
                  progress.params);
  }
  const char* unit = progress.iterations ? "iteration" : "step";
  return (resumed ? "resuming from " + std::string(unit) + " " + std::to_string(progress.step) + ":"
                  : std::string("training:")) +
         line + subject.model + (subject.optimizer.empty() ? "" : "; " + subject.optimizer) +
         "), " +
         (progress.iterations
              ? "L-BFGS, at most " + std::to_string(progress.planned_steps) + " iterations, "
              : std::to_string(progress.planned_steps) + " steps planned, ") +
         ThreadsText(progress);
}

std::optional<std::string> EvalLine(const RunProgress& progress,
                                    std::span<const train::MetricPoint> points,
                                    const std::string& eval_name) {
  bool eval = false;
  double loss = 0.0, metric = 0.0;
  std::optional<double> auc;
  const char* metric_name = "accuracy";
  for (const train::MetricPoint& p : points) {
    if (p.name == "eval_loss") eval = true, loss = p.value;
    if (p.name == "eval_accuracy") metric = p.value;
    if (p.name == "eval_auc") auc = p.value;
    if (p.name == "eval_mse") eval = true, metric_name = "mse", loss = metric = p.value;
  }
  if (!eval) return std::nullopt;
  char line[256], auc_text[32] = "";
  if (auc) std::snprintf(auc_text, sizeof auc_text, " auc %.4f", *auc);
  std::snprintf(line, sizeof line,
                progress.iterations ? "iteration %lld evaluations %.0f %s loss %.4f %s %.4f"
                                    : "step %lld epoch %.2f %s loss %.4f %s %.4f",
                static_cast<long long>(progress.step), progress.epochs, eval_name.c_str(), loss,
                metric_name, metric);
  return std::string(line) + auc_text;
}

}  // namespace dtrain::runner
