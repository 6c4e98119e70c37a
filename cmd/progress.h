// What `dtrain run` shows while training: on a TTY, one progress bar on stderr refreshed in place
// (epoch, step/total, loss, accuracy, samples/s, ETA); otherwise one plain line per evaluation on
// stdout. Silent in --json mode except for the TTY bar.
//
//   ProgressPrinter progress(/*json=*/false);
//   RunJobInProcess(job, id, store, {.stop = &stop, .observer = &progress});
//
// Called on the training thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "daemon/runner/local_run.h"

namespace dtrain::cli {

// The bar's "epoch E/N" from the run's current epoch (0-based) and its planned epochs (0: no
// limit): 1-based, and never past N (after the last step the current epoch is already N).
std::int64_t EpochShown(std::int64_t epoch, std::int64_t planned_epochs);

class ProgressPrinter final : public runner::RunObserver {
 public:
  explicit ProgressPrinter(bool json);
  ~ProgressPrinter() override;

  void OnStart(const runner::RunProgress& progress, const runner::RunSubject& subject,
               bool resumed) override;
  void OnMetrics(const runner::RunProgress& progress,
                 std::span<const train::MetricPoint> points) override;
  void OnCheckpoint(const runner::RunProgress& progress) override;

  // Clears the bar so that later output starts on a clean line.
  void Finish();

 private:
  void DrawBar(const runner::RunProgress& progress);

  bool bar_;    // stderr is a TTY
  bool lines_;  // plain lines on stdout (not --json)
  bool drawn_ = false;
  std::string eval_name_;
  double loss_ = 0.0, accuracy_ = -1.0, samples_per_sec_ = 0.0;
  std::int64_t start_step_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace dtrain::cli
