// Fuzz target: the sweep-file parser (config/sweep_file.h ParseSweepText), the code behind
// `dtrain sweep run`: a base job inline (or `job = "path"`, resolved under "/"), [sweep] and its
// parameters, every trial generated and its job validated. An input is TOML text. Invariants: no
// crash, no leak, no exception, a diagnostic for every refusal, and a sweep that loads has one
// validated trial per SweepTrials entry, numbered in order.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "config/sweep_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dtrain::config;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const SweepLoadResult loaded = ParseSweepText(text, "fuzz.sweep.toml", "/");
  if (loaded.ok() != loaded.diagnostics.empty()) __builtin_trap();
  if (!loaded.ok()) return 0;
  const std::vector<Trial> trials = SweepTrials(*loaded.sweep);
  if (trials.size() != loaded.trials.size()) __builtin_trap();
  for (std::size_t i = 0; i < trials.size(); ++i) {
    if (loaded.trials[i].trial.index != static_cast<std::int64_t>(i)) __builtin_trap();
  }
  return 0;
}
