// Which implementation runs each product of a conv2d layer — im2col + OpenBLAS, or oneDNN
// (math::DnnlConv) — chosen once per layer shape and process by timing both on this CPU.
//
//   SetConvPathMode(ConvPathMode::kOnednn);               // tests, benchmarks: force a path
//   std::vector<std::string> lines = ChooseConvPaths(model, rows);  // at a job's start: log these
//
// The mode is SetConvPathMode's, else the environment's DTRAIN_CONV ("im2col", "onednn", anything
// else or unset: auto), read once. In auto, a layer shape's choice is made the first time a pass
// needs it (ChooseConvPaths makes every layer's at once, at the job's batch size and threads),
// kept for the life of the process whatever the batch size, and described in one line. Both paths
// give the same values up to float rounding. Thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dtrain::model {

class Model;

enum class ConvPathMode { kAuto, kIm2col, kOnednn };

ConvPathMode CurrentConvPathMode();
void SetConvPathMode(ConvPathMode mode);

// The products of one conv2d pass that go through oneDNN.
struct ConvProducts {
  bool forward = false, input_gradient = false, weight_gradient = false;
};

// How much faster oneDNN ran each product than im2col (im2col's time / oneDNN's).
struct ConvSpeedUps {
  double forward = 0, input_gradient = 0, weight_gradient = 0;
};

// The time of `im2col` over oneDNN's: each run once to warm up, then the fastest of alternating
// rounds, as many as fit in a few tens of milliseconds (another process's load only adds time).
double MeasureSpeedUp(const std::function<void()>& im2col, const std::function<void()>& onednn);

// In auto mode, the products of layer shape `shape` ("conv2d 64x5x5 over 32x14x14") that oneDNN
// runs faster: measured by `measure` the first time (nullopt: oneDNN has no kernel for it), then
// remembered. Not to be called in a forced mode.
ConvProducts ChosenConvProducts(const std::string& shape,
                                const std::function<std::optional<ConvSpeedUps>()>& measure);

// Makes every conv2d layer of `model` choose its paths now, for passes of `rows` rows, by one
// training pass through it on zeros; returns a line per conv2d layer shape saying what it chose,
// or one line naming the forced path (none for a model without convolutions).
std::vector<std::string> ChooseConvPaths(const Model& model, int rows);

}  // namespace dtrain::model
