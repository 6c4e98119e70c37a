// Which implementation runs each product of a conv2d or pooling layer — the layer's own (im2col
// + OpenBLAS for conv2d, dtrain's loops for pooling) or oneDNN (math::DnnlConv, math::DnnlPool) —
// chosen once per layer shape and process by timing both on this CPU.
//
//   SetPathMode(PathMode::kOnednn);                                  // tests: force a path
//   std::vector<std::string> lines = ChooseLayerPaths(model, rows);  // at a job's start: log them
//
// The mode is SetPathMode's, else the environment's DTRAIN_CONV ("im2col": every layer's own
// path, "onednn", anything else or unset: auto), read once. In auto, a layer shape's choice is
// made the first time a pass needs it (ChooseLayerPaths makes every layer's at once, at the job's
// batch size and threads), kept for the life of the process whatever the batch size, and
// described in one line (a layer whose products change with math::CurrentPrecision names it in
// its shape: "... in bf16"). Both paths give the same values up to float rounding. Thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dtrain::model {

class Model;

// kOwn: every layer's own path (DTRAIN_CONV=im2col).
enum class PathMode { kAuto, kOwn, kOnednn };

PathMode CurrentPathMode();
void SetPathMode(PathMode mode);

// One product of a layer ("forward", "input gradient") and how much faster oneDNN ran it (the
// layer's own path's time over oneDNN's).
struct ProductSpeedUp {
  const char* product = "";
  double speed_up = 0;
};

// The time of `own` over oneDNN's: each run once to warm up, then the fastest of alternating
// rounds, as many as fit in a few tens of milliseconds (another process's load only adds time).
double MeasureSpeedUp(const std::function<void()>& own, const std::function<void()>& onednn);

// n made-up values to time a path on: standard normal, or (`rectified`) their positive parts, as
// after a relu. Random, not a pattern: some paths' speed depends on how predictable the values
// are (a max-pooling's comparisons), and a relu's half zeros are what a pooling usually sees.
std::vector<float> TimingValues(std::size_t n, bool rectified);

// In auto mode, which products of layer shape `shape` ("conv2d 64x5x5 over 32x14x14 to ...")
// oneDNN (or what `other` names) runs faster than the layer's own path (named `own` for people),
// in `measure`'s order: measured the first time (nullopt: oneDNN has no kernel for it, so none),
// then remembered.
std::vector<bool> ChosenProducts(
    const std::string& shape, const char* own,
    const std::function<std::optional<std::vector<ProductSpeedUp>>()>& measure,
    const char* other = "oneDNN");

// The products of a pass of `rows` rows through a layer of shape `shape` that go through oneDNN,
// `count` flags in `measure`'s order: none in mode kOwn or for 0 rows, all in kOnednn, in kAuto
// those ChosenProducts chose; in both only where `available(rows)` (oneDNN has kernels for it).
std::vector<bool> OnednnProducts(
    int rows, std::size_t count, const std::string& shape, const char* own,
    const std::function<bool(int)>& available,
    const std::function<std::optional<std::vector<ProductSpeedUp>>()>& measure);

// Makes every conv2d and pooling layer of `model` choose its paths now, for passes of `rows`
// rows, by one training pass through it on zeros; returns the lines of every choice made in this
// process (one per layer shape), or one line naming the forced path (none for a model without
// such layers).
std::vector<std::string> ChooseLayerPaths(const Model& model, int rows);

}  // namespace dtrain::model
