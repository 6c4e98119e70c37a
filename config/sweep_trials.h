// The trials of a sweep: its parameters' spaces (read from [sweep.parameters], sweep_file.h) and
// the two generators, grid and random. Pure functions without I/O, so that `dtrain sweep run`
// and a daemon-backed sweep draw the same trials from the same file.
//
//   std::vector<Trial> all = GridTrials(parameters);          // every point, once
//   Trial t = RandomTrial(parameters, /*seed=*/7, /*index=*/3);  // depends only on (seed, 3)
//   LoadResult job = ParseJobText(text, path, TrialOverrides(t), dir);
//
// Invariants (documented in dtrain-sweep.toml(5)):
// - Parameters are ordered by key (byte order); a trial lists its values in that order.
// - Grid: the cartesian product of every parameter's listed values ({ values } in the file's
//   order, { int = [a, b] } ascending), the last parameter varying fastest, like nested loops
//   with the first parameter outermost. Trial i is the i-th point; each point exactly once.
// - Random: trial i's values come from std::mt19937_64 seeded with SplitMix64(seed + SplitMix64(
//   i)), one 64-bit output x per parameter in order: u = (x >> 11) * 2^-53 in [0, 1);
//   uniform lo + u (hi - lo); log_uniform exp(log lo + u (log hi - log lo)); int lo + x mod
//   (hi - lo + 1); values element x mod n. The engine and these transforms are exact on every
//   platform; only log_uniform's exp and log come from the C library, whose last bit may differ
//   between C libraries (glibc's are within 1 ulp of the exact result).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtrain::config {

// One value of a parameter, as the override that sets it and as JSON.
struct ParameterValue {
  std::string toml;   // TOML text: "0.01", "[256, 128]", "\"adam\""
  std::string json;   // the same value as JSON text
  std::string shown;  // for people: floats with 4 significant digits, else the TOML text

  bool operator==(const ParameterValue&) const = default;
};

// One parameter's space over a job key.
struct SweepParameter {
  enum class Kind { kValues, kUniform, kLogUniform, kInt };
  std::string key;  // dotted job key: "optimizer.lr"
  Kind kind = Kind::kValues;
  std::vector<ParameterValue> values;   // kValues: in the file's order, at least one
  double lo = 0.0, hi = 0.0;            // kUniform, kLogUniform (0 < lo): lo < hi, finite
  std::int64_t int_lo = 0, int_hi = 0;  // kInt: int_lo < int_hi
};

// Whether a grid can enumerate the parameter (listed values or an integer range).
bool Enumerable(const SweepParameter& p);

// The number of points of the grid over `parameters` (all Enumerable), saturating at `cap` + 1.
std::int64_t GridSize(const std::vector<SweepParameter>& parameters, std::int64_t cap);

struct TrialParameter {
  std::string key;
  ParameterValue value;

  bool operator==(const TrialParameter&) const = default;
};

struct Trial {
  std::int64_t index = 0;                  // from 0, in generation order
  std::vector<TrialParameter> parameters;  // one per sweep parameter, by key

  bool operator==(const Trial&) const = default;
};

// Every point of the grid, in the order above. The parameters must all be Enumerable.
std::vector<Trial> GridTrials(const std::vector<SweepParameter>& parameters);

// Trial `index` of a random search with `seed`.
Trial RandomTrial(const std::vector<SweepParameter>& parameters, std::uint64_t seed,
                  std::int64_t index);

// The trial's values as job-file overrides: "optimizer.lr=0.01".
std::vector<std::string> TrialOverrides(const Trial& trial);

// "optimizer.lr=0.01 train.batch_size=64", with the shown texts.
std::string TrialLabel(const Trial& trial);

}  // namespace dtrain::config
