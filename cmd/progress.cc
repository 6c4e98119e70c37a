#include "cmd/progress.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cmd/human.h"
#include "cmd/terminal.h"
#include "daemon/runner/progress_lines.h"

namespace dtrain::cli {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

ProgressPrinter::ProgressPrinter(bool json) : bar_(StderrIsTty()), lines_(!json) {}

ProgressPrinter::~ProgressPrinter() { Finish(); }

void ProgressPrinter::OnStart(const runner::RunProgress& progress,
                              const runner::RunSubject& subject, bool resumed) {
  eval_name_ = subject.eval_name;
  start_step_ = progress.step;
  start_ = last_draw_ = Clock::now();
  if (lines_ && !bar_) {
    std::printf("%s\n", runner::StartLine(progress, subject, resumed).c_str());
    std::fflush(stdout);
  }
}

void ProgressPrinter::OnMetrics(const runner::RunProgress& progress,
                                std::span<const train::MetricPoint> points) {
  for (const train::MetricPoint& p : points) {
    if (p.name == "train_loss") loss_ = p.value;
    if (p.name == "train_accuracy") accuracy_ = p.value;
    if (p.name == "samples_per_sec") samples_per_sec_ = p.value;
  }
  const std::optional<std::string> eval_line = runner::EvalLine(progress, points, eval_name_);
  if (eval_line && lines_) {
    if (drawn_) std::fprintf(stderr, "\r\033[K");
    std::printf("%s\n", eval_line->c_str());
    std::fflush(stdout);
    drawn_ = false;
  }
  const auto now = Clock::now();
  if (bar_ && (now - last_draw_ > std::chrono::milliseconds(100) || eval_line)) {
    last_draw_ = now;
    DrawBar(progress);
  }
}

std::int64_t EpochShown(std::int64_t epoch, std::int64_t planned_epochs) {
  const std::int64_t current = epoch + 1;
  return planned_epochs > 0 ? std::min(current, planned_epochs) : current;
}

void ProgressPrinter::OnCheckpoint(const runner::RunProgress&) {}

void ProgressPrinter::DrawBar(const runner::RunProgress& progress) {
  const std::int64_t step = progress.step;
  const std::int64_t total = progress.planned_steps;
  const double done = total > 0 ? static_cast<double>(step) / static_cast<double>(total) : 0.0;
  const int width = 24;
  const int filled = std::clamp(static_cast<int>(done * width), 0, width);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(width - filled), '.');
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const double rate = static_cast<double>(step - start_step_) / std::max(elapsed, 1e-9);
  const double eta = rate > 0 ? static_cast<double>(total - step) / rate : -1.0;
  char epochs[32] = "";
  if (progress.planned_epochs > 0) {
    std::snprintf(epochs, sizeof epochs, "/%lld", static_cast<long long>(progress.planned_epochs));
  }
  char accuracy[32] = "";
  if (accuracy_ >= 0) std::snprintf(accuracy, sizeof accuracy, " acc %.1f%%", 100 * accuracy_);
  if (progress.iterations) {  // L-BFGS: at most planned_steps iterations; it may stop sooner
    std::fprintf(stderr, "\r\033[KL-BFGS [%s] iteration %lld/%lld loss %.4f%s %.0f samples/s",
                 bar.c_str(), static_cast<long long>(step), static_cast<long long>(total), loss_,
                 accuracy, samples_per_sec_);
  } else {
    std::fprintf(stderr,
                 "\r\033[Kepoch %lld%s [%s] step %lld/%lld loss %.4f%s %.0f samples/s ETA %s",
                 static_cast<long long>(EpochShown(static_cast<std::int64_t>(progress.epoch),
                                                   progress.planned_epochs)),
                 epochs, bar.c_str(),
                 static_cast<long long>(step), static_cast<long long>(total), loss_, accuracy,
                 samples_per_sec_, FormatDuration(eta).c_str());
  }
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressPrinter::Finish() {
  if (drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
  }
}

}  // namespace dtrain::cli
