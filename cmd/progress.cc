#include "cmd/progress.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cmd/human.h"
#include "cmd/json_fields.h"
#include "cmd/terminal.h"
#include "daemon/runner/progress_lines.h"
#include "daemon/store/metric_value.h"

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

std::string StepBar(std::int64_t step, std::int64_t total, const char* unit) {
  std::string text(unit);
  text.append(" ").append(std::to_string(step));
  if (total <= 0) return text;
  const double done = static_cast<double>(step) / static_cast<double>(total);
  const int width = 24;
  const int filled = std::clamp(static_cast<int>(done * width), 0, width);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(width - filled), '.');
  return "[" + bar + "] " + text + "/" + std::to_string(total);
}

std::string BarTail(double loss, double accuracy, double samples_per_sec,
                    std::optional<double> eta_seconds) {
  char text[128];
  char acc[32] = "";
  if (accuracy >= 0) std::snprintf(acc, sizeof acc, " acc %.1f%%", 100 * accuracy);
  std::snprintf(text, sizeof text, " loss %.4f%s %.0f samples/s", loss, acc, samples_per_sec);
  return text + (eta_seconds ? " ETA " + FormatDuration(*eta_seconds) : std::string());
}

void FollowBar::Update(const nlohmann::json& progress) {
  const nlohmann::json& metrics = JsonObject(progress, "metrics");
  const auto metric = [&metrics](const char* name, double fallback) {
    const nlohmann::json* value = JsonField(metrics, name);
    return value ? store::MetricValueFromJson(*value).value_or(fallback) : fallback;
  };
  text_ = StepBar(JsonInt(progress, "step"), JsonInt(progress, "total_steps"), "step") +
          BarTail(metric("train_loss", 0.0), metric("train_accuracy", -1.0),
                  metric("samples_per_sec", 0.0), JsonOptionalNumber(progress, "eta_seconds"));
  Redraw();
}

void FollowBar::Clear() {
  if (!drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

void FollowBar::Redraw() {
  if (text_.empty()) return;
  std::fprintf(stderr, "\r\033[K%s", text_.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

std::int64_t EpochShown(std::int64_t epoch, std::int64_t planned_epochs) {
  const std::int64_t current = epoch + 1;
  return planned_epochs > 0 ? std::min(current, planned_epochs) : current;
}

void ProgressPrinter::OnCheckpoint(const runner::RunProgress&) {}

void ProgressPrinter::OnEvent(const std::string& line) {
  Finish();  // the bar, if any, is drawn again at the next metrics
  std::FILE* out = lines_ && !bar_ ? stdout : stderr;  // among the plain lines, as a log has it
  std::fprintf(out, "%s\n", line.c_str());
  std::fflush(out);
}

void ProgressPrinter::DrawBar(const runner::RunProgress& progress) {
  const std::int64_t step = progress.step;
  const std::int64_t total = progress.planned_steps;
  std::string text;
  if (progress.iterations) {  // L-BFGS: at most planned_steps iterations; it may stop sooner
    text = "L-BFGS " + StepBar(step, total, "iteration") +
           BarTail(loss_, accuracy_, samples_per_sec_, std::nullopt);
  } else {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    const double rate = static_cast<double>(step - start_step_) / std::max(elapsed, 1e-9);
    const double eta = rate > 0 ? static_cast<double>(total - step) / rate : -1.0;  // "--"
    text = "epoch ";
    text.append(std::to_string(
        EpochShown(static_cast<std::int64_t>(progress.epoch), progress.planned_epochs)));
    if (progress.planned_epochs > 0) {
      text.append("/").append(std::to_string(progress.planned_epochs));
    }
    text.append(" ").append(StepBar(step, total, "step"));
    text.append(BarTail(loss_, accuracy_, samples_per_sec_, eta));
  }
  std::fprintf(stderr, "\r\033[K%s", text.c_str());
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
