#include "config/sweep_trials.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "config/toml_text.h"

namespace dtrain::config {
namespace {

std::uint64_t SplitMix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

ParameterValue FloatValue(double value) {
  char shown[32];
  std::snprintf(shown, sizeof shown, "%.4g", value);
  const std::string text = TomlFloat(value);
  return {text, text, shown};
}

ParameterValue IntValue(std::int64_t value) {
  const std::string text = std::to_string(value);
  return {text, text, text};
}

// The number of listed values of an Enumerable parameter.
std::uint64_t Count(const SweepParameter& p) {
  if (p.kind == SweepParameter::Kind::kInt) {
    return static_cast<std::uint64_t>(p.int_hi) - static_cast<std::uint64_t>(p.int_lo) + 1;
  }
  return p.values.size();
}

// Value `i` (< Count) of an Enumerable parameter.
ParameterValue Nth(const SweepParameter& p, std::uint64_t i) {
  if (p.kind == SweepParameter::Kind::kInt) {
    return IntValue(static_cast<std::int64_t>(static_cast<std::uint64_t>(p.int_lo) + i));
  }
  return p.values[i];
}

}  // namespace

bool Enumerable(const SweepParameter& p) {
  return p.kind == SweepParameter::Kind::kValues || p.kind == SweepParameter::Kind::kInt;
}

std::int64_t GridSize(const std::vector<SweepParameter>& parameters, std::int64_t cap) {
  std::uint64_t size = 1;
  for (const SweepParameter& p : parameters) {
    const std::uint64_t count = Count(p);
    if (count == 0 || size > static_cast<std::uint64_t>(cap) / count) {
      return count == 0 ? 0 : cap + 1;
    }
    size *= count;
  }
  return static_cast<std::int64_t>(std::min<std::uint64_t>(size, cap + 1));
}

std::vector<Trial> GridTrials(const std::vector<SweepParameter>& parameters) {
  const std::int64_t size = GridSize(parameters, std::numeric_limits<std::int32_t>::max());
  std::vector<Trial> trials;
  trials.reserve(static_cast<std::size_t>(size));
  for (std::int64_t index = 0; index < size; ++index) {
    Trial trial{index, std::vector<TrialParameter>(parameters.size())};
    // Mixed radix, the last parameter the least significant digit.
    auto rest = static_cast<std::uint64_t>(index);
    for (std::size_t k = parameters.size(); k-- > 0;) {
      const std::uint64_t count = Count(parameters[k]);
      trial.parameters[k] = {parameters[k].key, Nth(parameters[k], rest % count)};
      rest /= count;
    }
    trials.push_back(std::move(trial));
  }
  return trials;
}

Trial RandomTrial(const std::vector<SweepParameter>& parameters, std::uint64_t seed,
                  std::int64_t index) {
  std::mt19937_64 engine(SplitMix64(seed + SplitMix64(static_cast<std::uint64_t>(index))));
  Trial trial{index, {}};
  for (const SweepParameter& p : parameters) {
    const std::uint64_t x = engine();
    const double u = static_cast<double>(x >> 11) * 0x1.0p-53;
    ParameterValue value;
    switch (p.kind) {
      case SweepParameter::Kind::kUniform:
        value = FloatValue(std::min(p.lo + u * (p.hi - p.lo), p.hi));
        break;
      case SweepParameter::Kind::kLogUniform: {
        const double lo = std::log(p.lo), hi = std::log(p.hi);
        value = FloatValue(std::clamp(std::exp(lo + u * (hi - lo)), p.lo, p.hi));
        break;
      }
      case SweepParameter::Kind::kInt:
      case SweepParameter::Kind::kValues:
        value = Nth(p, x % Count(p));
        break;
    }
    trial.parameters.push_back({p.key, std::move(value)});
  }
  return trial;
}

std::vector<std::string> TrialOverrides(const Trial& trial) {
  std::vector<std::string> overrides;
  for (const TrialParameter& p : trial.parameters) overrides.push_back(p.key + "=" + p.value.toml);
  return overrides;
}

std::string TrialLabel(const Trial& trial) {
  std::string label;
  for (const TrialParameter& p : trial.parameters) {
    if (!label.empty()) label += ' ';
    label += p.key + "=" + p.value.shown;
  }
  return label;
}

}  // namespace dtrain::config
