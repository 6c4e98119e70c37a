#include "core/model/conv_path.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>

#include "core/math/buffer.h"
#include "core/model/model.h"

namespace dtrain::model {
namespace {

// Rounds of a measurement: enough for about kBudgetSeconds of each side, within these bounds.
constexpr int kMinRounds = 5, kMaxRounds = 40;
constexpr double kBudgetSeconds = 0.02;

ConvPathMode ModeFromEnvironment() {
  const char* value = std::getenv("DTRAIN_CONV");
  const std::string_view mode = value == nullptr ? "" : value;
  if (mode == "im2col") return ConvPathMode::kIm2col;
  if (mode == "onednn") return ConvPathMode::kOnednn;
  return ConvPathMode::kAuto;
}

std::atomic<ConvPathMode>& Mode() {
  static std::atomic<ConvPathMode> mode{ModeFromEnvironment()};
  return mode;
}

// Every shape's choice so far, and its line, in the order they were made.
struct Choices {
  std::mutex mutex;
  std::map<std::string, ConvProducts> by_shape;
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
std::string Describe(const char* product, double speed_up) {
  char text[96];
  if (speed_up > 1.0) {
    std::snprintf(text, sizeof text, "oneDNN %s (%.2fx im2col's speed)", product, speed_up);
  } else {
    std::snprintf(text, sizeof text, "im2col %s (oneDNN %.2fx)", product, speed_up);
  }
  return text;
}

}  // namespace

ConvPathMode CurrentConvPathMode() { return Mode().load(); }

void SetConvPathMode(ConvPathMode mode) { Mode().store(mode); }

double MeasureSpeedUp(const std::function<void()>& im2col, const std::function<void()>& onednn) {
  const double warm = Seconds(im2col) + Seconds(onednn);
  const int rounds = std::clamp(static_cast<int>(2 * kBudgetSeconds / std::max(warm, 1e-6)),
                                kMinRounds, kMaxRounds);
  double a = Seconds(im2col), b = Seconds(onednn);
  for (int round = 1; round < rounds; ++round) {
    a = std::min(a, Seconds(im2col));
    b = std::min(b, Seconds(onednn));
  }
  return a / std::max(b, 1e-9);
}

ConvProducts ChosenConvProducts(const std::string& shape,
                                const std::function<std::optional<ConvSpeedUps>()>& measure) {
  Choices& choices = AllChoices();
  const std::lock_guard lock(choices.mutex);
  if (const auto found = choices.by_shape.find(shape); found != choices.by_shape.end()) {
    return found->second;
  }
  const std::optional<ConvSpeedUps> speed_ups = measure();
  ConvProducts chosen;
  if (!speed_ups) {
    choices.lines.push_back(shape + ": im2col + OpenBLAS (oneDNN has no kernel for it here)");
  } else {
    chosen = {.forward = speed_ups->forward > 1.0,
              .input_gradient = speed_ups->input_gradient > 1.0,
              .weight_gradient = speed_ups->weight_gradient > 1.0};
    choices.lines.push_back(shape + ": " + Describe("forward", speed_ups->forward) + ", " +
                            Describe("input gradient", speed_ups->input_gradient) + ", " +
                            Describe("weight gradient", speed_ups->weight_gradient));
  }
  choices.by_shape.emplace(shape, chosen);
  return chosen;
}

std::vector<std::string> ChooseConvPaths(const Model& model, int rows) {
  const std::vector<LayerSpec> layers = ModelLayers(model.spec());
  if (std::none_of(layers.begin(), layers.end(),
                   [](const LayerSpec& l) { return l.kind == LayerKind::kConv2d; })) {
    return {};
  }
  switch (CurrentConvPathMode()) {
    case ConvPathMode::kIm2col:
      return {"convolutions: im2col + OpenBLAS (DTRAIN_CONV=im2col)"};
    case ConvPathMode::kOnednn:
      return {"convolutions: oneDNN where it has kernels (DTRAIN_CONV=onednn)"};
    case ConvPathMode::kAuto:
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
