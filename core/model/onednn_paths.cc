#include "core/model/onednn_paths.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <string_view>

#include "core/math/buffer.h"
#include "core/model/model.h"

namespace dtrain::model {
namespace {

// Rounds of a measurement: enough for about kBudgetSeconds of each side, within these bounds.
constexpr int kMinRounds = 7, kMaxRounds = 100;
constexpr double kBudgetSeconds = 0.05;

PathMode ModeFromEnvironment() {
  const char* value = std::getenv("DTRAIN_CONV");
  const std::string_view mode = value == nullptr ? "" : value;
  if (mode == "im2col") return PathMode::kOwn;
  if (mode == "onednn") return PathMode::kOnednn;
  return PathMode::kAuto;
}

std::atomic<PathMode>& Mode() {
  static std::atomic<PathMode> mode{ModeFromEnvironment()};
  return mode;
}

// Every shape's choice so far, and its line, in the order they were made.
struct Choices {
  std::mutex mutex;
  std::map<std::string, std::vector<bool>> by_shape;
  std::vector<std::string> lines;
};

Choices& AllChoices() {
  static Choices choices;
  return choices;
}

double Seconds(const std::function<void()>& run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// "oneDNN forward (1.93x im2col's speed)", "im2col forward (oneDNN 0.85x)".
std::string Describe(const ProductSpeedUp& p, const char* own, const char* other) {
  char text[160];
  if (p.speed_up > 1.0) {
    std::snprintf(text, sizeof text, "%s %s (%.2fx %s's speed)", other, p.product, p.speed_up, own);
  } else {
    std::snprintf(text, sizeof text, "%s %s (%s %.2fx)", own, p.product, other, p.speed_up);
  }
  return text;
}

bool HasChoices(const LayerSpec& l) {
  return l.kind == LayerKind::kConv2d || l.kind == LayerKind::kMaxPool2d ||
         l.kind == LayerKind::kAvgPool2d;
}

}  // namespace

PathMode CurrentPathMode() { return Mode().load(); }

void SetPathMode(PathMode mode) { Mode().store(mode); }

double MeasureSpeedUp(const std::function<void()>& own, const std::function<void()>& onednn) {
  const double warm = Seconds(own) + Seconds(onednn);
  const int rounds = std::clamp(static_cast<int>(2 * kBudgetSeconds / std::max(warm, 1e-6)),
                                kMinRounds, kMaxRounds);
  double a = Seconds(own), b = Seconds(onednn);
  for (int round = 1; round < rounds; ++round) {
    a = std::min(a, Seconds(own));
    b = std::min(b, Seconds(onednn));
  }
  return a / std::max(b, 1e-9);
}

std::vector<float> TimingValues(std::size_t n, bool rectified) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(n);
  for (float& v : values) v = rectified ? std::max(0.0f, normal(rng)) : normal(rng);
  return values;
}

std::vector<bool> ChosenProducts(
    const std::string& shape, const char* own,
    const std::function<std::optional<std::vector<ProductSpeedUp>>()>& measure, const char* other) {
  Choices& choices = AllChoices();
  const std::lock_guard lock(choices.mutex);
  if (const auto found = choices.by_shape.find(shape); found != choices.by_shape.end()) {
    return found->second;
  }
  const std::optional<std::vector<ProductSpeedUp>> speed_ups = measure();
  std::vector<bool> chosen;
  std::string line = shape + ": ";
  if (!speed_ups) {
    line += std::string(own) + " (" + other + " has no kernel for it here)";
  } else {
    for (const ProductSpeedUp& p : *speed_ups) {
      chosen.push_back(p.speed_up > 1.0);
      line += (chosen.size() > 1 ? ", " : "") + Describe(p, own, other);
    }
  }
  choices.lines.push_back(line);
  choices.by_shape.emplace(shape, chosen);
  return chosen;
}

std::vector<bool> OnednnProducts(
    int rows, std::size_t count, const std::string& shape, const char* own,
    const std::function<bool(int)>& available,
    const std::function<std::optional<std::vector<ProductSpeedUp>>()>& measure) {
  std::vector<bool> chosen(count, false);
  const PathMode mode = CurrentPathMode();
  if (rows == 0 || mode == PathMode::kOwn) return chosen;
  if (mode == PathMode::kOnednn) {
    chosen.assign(count, true);
  } else {
    chosen = ChosenProducts(shape, own, measure);
    chosen.resize(count, false);
  }
  if (std::find(chosen.begin(), chosen.end(), true) == chosen.end() || available(rows)) {
    return chosen;
  }
  return std::vector<bool>(count, false);
}

std::vector<std::string> ChooseLayerPaths(const Model& model, int rows) {
  const std::vector<LayerSpec> layers = ModelLayers(model.spec());
  if (std::none_of(layers.begin(), layers.end(), HasChoices)) return {};
  switch (CurrentPathMode()) {
    case PathMode::kOwn:
      return {"convolutions and pooling: their own paths, im2col + GEMM (DTRAIN_CONV=im2col)"};
    case PathMode::kOnednn:
      return {"convolutions and pooling: oneDNN where it has kernels (DTRAIN_CONV=onednn)"};
    case PathMode::kAuto:
      break;
  }
  rows = std::max(rows, 1);
  Workspace ws(model, rows);
  math::FloatBuffer params(model.NumParams()), grad(model.NumParams());
  math::FloatBuffer x(static_cast<std::size_t>(rows) * ModelInputShape(model.spec()).Size());
  math::FloatBuffer y(static_cast<std::size_t>(rows));  // labels: class 0, or target 0
  model.ForwardBackward(params.data(), x.data(), y.data(), rows, 0.0f, grad.data(), ws);
  Choices& choices = AllChoices();
  const std::lock_guard lock(choices.mutex);
  return choices.lines;
}

}  // namespace dtrain::model
