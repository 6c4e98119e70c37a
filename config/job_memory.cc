#include "config/job_memory.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <vector>

#include "core/model/model.h"
#include "core/model/partition_plan.h"
#include "core/optim/optimizer.h"

namespace dtrain::config {
namespace {

constexpr std::uint64_t kFloat = sizeof(float);

// Saturating arithmetic: a typo of a model (hidden = [1000000, 1000000]) must give a huge figure,
// never a wrapped small one.
std::uint64_t Times(std::uint64_t a, std::uint64_t b) {
  return a != 0 && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}
std::uint64_t Plus(std::uint64_t a, std::uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

std::string Plural(std::uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string OptimizerState(optim::OptimizerType type, int history) {
  if (type == optim::OptimizerType::kLbfgs) {
    return ", L-BFGS's " + std::to_string(optim::LbfgsVectorCount(history) - 1) + " vectors";
  }
  const int n = optim::StateVectorCount(type);
  if (n == 0) return "";
  return ", " + std::string(optim::OptimizerTypeName(type)) + "'s " +
         (n == 1 ? "state vector" : std::to_string(n) + " state vectors");
}

// With model parallelism each process holds one partition: the largest the job's plan makes (a
// K-th of the model if the plan cannot be made here; the job's check then names why).
std::uint64_t LargestPartition(const model::ModelSpec& spec, const ClusterConfig& cluster,
                               std::uint64_t params) {
  const int k = cluster.model_parallel;
  if (k <= 1) return params;
  const std::uint64_t even =
      (params + static_cast<std::uint64_t>(k) - 1) / static_cast<std::uint64_t>(k);
  if (!model::ValidateModelSpec(spec).ok()) return even;
  Result<model::PartitionPlan> plan = model::PlanPartitions(spec, cluster.partition, k);
  if (!plan.ok()) return even;
  std::uint64_t largest = 0;
  for (int p = 0; p < k; ++p) largest = std::max<std::uint64_t>(largest, plan.value().Size(p));
  return largest;
}

}  // namespace

JobMemory EstimateJobMemory(const JobConfig& job) {
  if (job.data.sparse) {  // its keys are the features the rows touch, known once they are read
    return {.breakdown = "a sparse model, whose size the data decides"};
  }
  model::ModelSpec spec = job.model;
  if (spec.inputs == 0 && job.data.features > 0) spec.inputs = static_cast<int>(job.data.features);
  spec.inputs = std::max(spec.inputs, 1);
  spec.outputs = std::max(spec.outputs, 1);
  JobMemory m;
  std::uint64_t widths = 0;  // every layer's outputs
  std::uint64_t widest = static_cast<std::uint64_t>(spec.inputs);
  std::uint64_t params = 0;
  std::uint64_t scratch = 0;  // the largest layer's working memory for a batch, floats
  if (spec.type == model::ModelType::kSequential) {
    // The layers' own sizes once the input shape is known (given, or the data's: checked when
    // the job starts); a model is cheap to build, its parameters are not allocated.
    if (spec.input_shape.Size() > 0 && model::ValidateModelSpec(spec).ok()) {
      const model::Model built(spec);
      params = built.NumParams();
      widest = built.MaxWidth();
      for (std::size_t l = 0; l < built.NumLayers(); ++l) {
        widths = Plus(widths, built.layer(l).output().Size());
        scratch =
            std::max<std::uint64_t>(scratch, built.layer(l).ScratchFloats(job.train.batch_size));
      }
    }
  } else {
    int in = spec.inputs;
    std::vector<int> outs = spec.hidden;
    outs.push_back(spec.outputs);
    for (int out : outs) {  // as model::Model lays them out, without building one
      const auto o = static_cast<std::uint64_t>(out);
      params = Plus(params, Times(static_cast<std::uint64_t>(in) + 1, o));
      widths = Plus(widths, o);
      widest = std::max(widest, o);
      in = out;
    }
  }
  m.params = params;
  const auto k = static_cast<std::uint64_t>(std::max(job.cluster.model_parallel, 1));
  const std::uint64_t share = LargestPartition(spec, job.cluster, params);
  // L-BFGS: its vectors beyond the parameters and gradient, and a chunk's gradient; a
  // checkpoint keeps the gradient and the history.
  const bool lbfgs = job.optimizer.type == optim::OptimizerType::kLbfgs;
  const int history = job.lbfgs.history;
  const int state =
      lbfgs ? optim::LbfgsVectorCount(history) - 1 : optim::StateVectorCount(job.optimizer.type);
  const int saved_state = lbfgs ? 1 + 2 * history : state;
  const std::uint64_t model = Times(Times(share, kFloat), 2 + static_cast<std::uint64_t>(state));
  // Each layer's output of a batch, and two back-propagated gradients as wide as the widest.
  const std::uint64_t batch = static_cast<std::uint64_t>(job.train.batch_size);
  const std::uint64_t activations =
      Plus(Times(Times(batch, kFloat), Plus(widths, Times(widest, 2))) / k, Times(scratch, kFloat));
  // A checkpoint is encoded from the trainer's own buffers; with parameter servers, from the
  // shards' snapshot, which the replica holds as well while it encodes it.
  const std::uint64_t copies = job.cluster.Servers() > 0 ? 2 : 1;
  const std::uint64_t checkpoint =
      Times(Times(share, kFloat), copies * (1 + static_cast<std::uint64_t>(saved_state)));
  m.replica = Plus(Plus(model, activations), checkpoint);
  m.breakdown = FormatBytes(model) + " for " + Plural(share, "parameter", "parameters") +
                (k > 1 ? " (its partition's share of " + std::to_string(params) + ": the parameters"
                       : std::string(" (the parameters")) +
                ", their gradient" + OptimizerState(job.optimizer.type, history) + "), " +
                FormatBytes(checkpoint) + " to take a checkpoint of them";
  if (activations > 0) m.breakdown += " and " + FormatBytes(activations) + " of activations";
  const int shards = job.cluster.Servers();
  if (shards > 0) {
    const std::uint64_t slice = share / static_cast<std::uint64_t>(shards) + 1;
    // An elastic job's shard on several servers also keeps them from before its last step (to
    // undo it: ps_protocol.md, "Elastic jobs").
    const std::uint64_t undo =
        job.cluster.Elastic() && shards > 1 ? 1 + static_cast<std::uint64_t>(state) : 0;
    m.shard = Times(Times(slice, kFloat), 2 + static_cast<std::uint64_t>(state) + undo);
  }
  const bool packed = job.cluster.hosts.empty() && job.cluster.placement == PlacementPolicy::kPack;
  // A Sandblaster coordinator holds L-BFGS's vectors as a replica would.
  const auto replicas =
      static_cast<std::uint64_t>(job.cluster.Trainers() + job.cluster.Coordinators());
  m.host = packed ? Plus(Times(m.replica, replicas),
                         Times(m.shard, static_cast<std::uint64_t>(job.cluster.Shards())))
                  : std::max(m.replica, m.shard);
  return m;
}

std::uint64_t ProcessOverhead(int blas_threads) {
  return (std::uint64_t{256} << 20) +
         static_cast<std::uint64_t>(std::max(blas_threads, 1)) * (std::uint64_t{128} << 20);
}

std::string FormatBytes(std::uint64_t bytes) {
  if (bytes == UINT64_MAX) return "more than 16 EiB";
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 6) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0 || value == std::floor(value)) {
    std::snprintf(text, sizeof text, "%.0f %s", value, kUnits[unit]);
  } else {
    std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  }
  return text;
}

Result<std::uint64_t> ParseBytes(std::string_view text) {
  const auto invalid = [&] {
    return Status::Error(
        "must be a size such as \"4GiB\", \"512 MiB\" or a number of bytes, got \"" +
        std::string(text) + "\"");
  };
  double number = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error != std::errc() || !std::isfinite(number) || number < 0) return invalid();
  std::string_view unit = text.substr(static_cast<std::size_t>(end - text.data()));
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  static const std::pair<std::string_view, int> kUnits[] = {
      {"", 0},    {"B", 0}, {"K", 1},   {"KiB", 1}, {"M", 2},
      {"MiB", 2}, {"G", 3}, {"GiB", 3}, {"T", 4},   {"TiB", 4}};
  const auto found = std::find_if(std::begin(kUnits), std::end(kUnits),
                                  [unit](const auto& u) { return u.first == unit; });
  if (found == std::end(kUnits)) return invalid();
  const double bytes = std::round(std::ldexp(number, 10 * found->second));
  if (bytes >= 18446744073709551615.0) return invalid();
  return static_cast<std::uint64_t>(bytes);
}

}  // namespace dtrain::config
