// What `dtrain run` shows while training: on a TTY, one progress bar on stderr refreshed in place
// (epoch, step/total, loss, accuracy, samples/s, ETA); otherwise one plain line per evaluation on
// stdout. Silent in --json mode except for the TTY bar. And the same bar for a job followed
// through the daemon (`submit`, `logs -f`), drawn from its PROGRESS frames (FollowBar).
//
//   ProgressPrinter progress(/*json=*/false);
//   RunJobInProcess(job, id, store, {.stop = &stop, .observer = &progress});
//
// Called on the training (following) thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "daemon/runner/local_run.h"

namespace dtrain::cli {

// The bar's "epoch E/N" from the run's current epoch (0-based) and its planned epochs (0: no
// limit): 1-based, and never past N (after the last step the current epoch is already N).
std::int64_t EpochShown(std::int64_t epoch, std::int64_t planned_epochs);

// "[######..................] step 120/480", or "step 120" when the total is unknown (0);
// `unit` names the steps ("step", "iteration").
std::string StepBar(std::int64_t step, std::int64_t total, const char* unit);
// " loss 0.2500 acc 87.5% 1234 samples/s ETA 2m24s": the accuracy when not negative; the ETA
// when given ("ETA --" for a negative one: not known yet).
std::string BarTail(double loss, double accuracy, double samples_per_sec,
                    std::optional<double> eta_seconds);

// A followed job's bar on stderr, from the daemon's PROGRESS objects (control_protocol.md):
// Update draws the newest; Clear takes it off the line before other output, Redraw puts it back.
class FollowBar {
 public:
  void Update(const nlohmann::json& progress);
  void Clear();
  void Redraw();

 private:
  std::string text_;  // empty: nothing to draw yet
  bool drawn_ = false;
};

class ProgressPrinter final : public runner::RunObserver {
 public:
  explicit ProgressPrinter(bool json);
  ~ProgressPrinter() override;

  void OnStart(const runner::RunProgress& progress, const runner::RunSubject& subject,
               bool resumed) override;
  void OnMetrics(const runner::RunProgress& progress,
                 std::span<const train::MetricPoint> points) override;
  void OnCheckpoint(const runner::RunProgress& progress) override;
  // A line the run's log would carry (a warning, an L-BFGS event): among the plain lines on
  // stdout, else on stderr (above the bar).
  void OnEvent(const std::string& line) override;

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
