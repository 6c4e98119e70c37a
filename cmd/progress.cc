#include "cmd/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "cmd/terminal.h"

namespace dtrain::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--";
  const auto s = static_cast<long>(seconds + 0.5);
  char out[32];
  if (s >= 3600) {
    std::snprintf(out, sizeof out, "%ldh%02ldm", s / 3600, (s / 60) % 60);
  } else if (s >= 60) {
    std::snprintf(out, sizeof out, "%ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(out, sizeof out, "%lds", s);
  }
  return out;
}

}  // namespace

ProgressPrinter::ProgressPrinter(bool json) : bar_(StderrIsTty()), lines_(!json) {}

ProgressPrinter::~ProgressPrinter() { Finish(); }

void ProgressPrinter::OnStart(const train::Trainer& trainer, const runner::JobData& data,
                              bool resumed) {
  eval_name_ = data.eval_name;
  start_step_ = trainer.position().step;
  start_ = last_draw_ = Clock::now();
  if (lines_ && !bar_) {
    std::printf("%s %zu training rows, %zu parameters (%s), %lld steps planned\n",
                resumed ? "resuming:" : "training:", data.train.rows,
                trainer.model().NumParams(), model::FormatModelSpec(data.spec).c_str(),
                static_cast<long long>(trainer.PlannedSteps()));
    std::fflush(stdout);
  }
}

void ProgressPrinter::OnMetrics(const train::Trainer& trainer,
                                std::span<const train::MetricPoint> points) {
  bool eval = false;
  double eval_loss = 0.0, eval_metric = 0.0;
  std::string metric_name;
  for (const train::MetricPoint& p : points) {
    if (p.name == "train_loss") loss_ = p.value;
    if (p.name == "train_accuracy") accuracy_ = p.value;
    if (p.name == "samples_per_sec") samples_per_sec_ = p.value;
    if (p.name == "eval_loss") eval = true, eval_loss = p.value;
    if (p.name == "eval_accuracy") metric_name = "accuracy", eval_metric = p.value;
    if (p.name == "eval_mse") eval = true, metric_name = "mse", eval_metric = eval_loss = p.value;
  }
  if (eval && lines_) {
    if (drawn_) std::fprintf(stderr, "\r\033[K");
    std::printf("step %lld epoch %.2f %s loss %.4f %s %.4f\n",
                static_cast<long long>(trainer.position().step), trainer.Epochs(),
                eval_name_.c_str(), eval_loss, metric_name.c_str(), eval_metric);
    std::fflush(stdout);
    drawn_ = false;
  }
  const auto now = Clock::now();
  if (bar_ && (now - last_draw_ > std::chrono::milliseconds(100) || eval)) {
    last_draw_ = now;
    DrawBar(trainer);
  }
}

void ProgressPrinter::OnCheckpoint(const train::Trainer&) {}

void ProgressPrinter::DrawBar(const train::Trainer& trainer) {
  const std::int64_t step = trainer.position().step;
  const std::int64_t total = trainer.PlannedSteps();
  const double done = total > 0 ? static_cast<double>(step) / static_cast<double>(total) : 0.0;
  const int width = 24;
  const int filled = std::clamp(static_cast<int>(done * width), 0, width);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(width - filled), '.');
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const double rate = static_cast<double>(step - start_step_) / std::max(elapsed, 1e-9);
  const double eta = rate > 0 ? static_cast<double>(total - step) / rate : -1.0;
  char epochs[32] = "";
  if (trainer.options().epochs > 0) {
    std::snprintf(epochs, sizeof epochs, "/%lld", static_cast<long long>(trainer.options().epochs));
  }
  char accuracy[32] = "";
  if (accuracy_ >= 0) std::snprintf(accuracy, sizeof accuracy, " acc %.1f%%", 100 * accuracy_);
  std::fprintf(stderr, "\r\033[Kepoch %llu%s [%s] step %lld/%lld loss %.4f%s %.0f samples/s ETA %s",
               static_cast<unsigned long long>(trainer.position().epoch + 1), epochs,
               bar.c_str(), static_cast<long long>(step), static_cast<long long>(total), loss_,
               accuracy, samples_per_sec_, FormatDuration(eta).c_str());
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
