#include "config/job.h"

#include <algorithm>
#include <cmath>

#include "config/mode_traits.h"
#include "core/name_table.h"

namespace dtrain::config {
namespace {

constexpr NameTable<DataFormat, 5> kFormats{{{{DataFormat::kIdx, "idx"},
                                              {DataFormat::kCsv, "csv"},
                                              {DataFormat::kLibsvm, "libsvm"},
                                              {DataFormat::kNpy, "npy"},
                                              {DataFormat::kSynthetic, "synthetic"}}},
                                            "idx, csv, libsvm, npy, synthetic"};
constexpr NameTable<SyntheticKind, 2> kSyntheticKinds{
    {{{SyntheticKind::kBlobs, "blobs"}, {SyntheticKind::kLinear, "linear"}}}, "blobs, linear"};
constexpr NameTable<AllReduce, 2> kAllReduces{
    {{{AllReduce::kRing, "ring"}, {AllReduce::kPs, "ps"}}}, "ring, ps"};
constexpr NameTable<Transport, 2> kTransports{
    {{{Transport::kAuto, "auto"}, {Transport::kTcp, "tcp"}}}, "auto, tcp"};
constexpr NameTable<Hierarchy, 2> kHierarchies{
    {{{Hierarchy::kAuto, "auto"}, {Hierarchy::kFlat, "flat"}}}, "auto, flat"};
constexpr NameTable<LrScaling, 3> kLrScalings{
    {{{LrScaling::kNone, "none"}, {LrScaling::kLinear, "linear"}, {LrScaling::kSqrt, "sqrt"}}},
    "none, linear, sqrt"};
constexpr NameTable<PlacementPolicy, 2> kPlacements{
    {{{PlacementPolicy::kPack, "pack"}, {PlacementPolicy::kSpread, "spread"}}}, "pack, spread"};
constexpr NameTable<Scheduler, 2> kSchedulers{
    {{{Scheduler::kDaemon, "daemon"}, {Scheduler::kSlurm, "slurm"}}}, "daemon, slurm"};

bool SameSchedule(const optim::ScheduleOptions& a, const optim::ScheduleOptions& b) {
  return a.type == b.type && a.lr == b.lr && a.warmup_steps == b.warmup_steps &&
         a.step_size == b.step_size && a.gamma == b.gamma && a.total_steps == b.total_steps &&
         a.min_lr == b.min_lr;
}

bool SameTrain(const train::TrainOptions& a, const train::TrainOptions& b) {
  return a.epochs == b.epochs && a.steps == b.steps && a.batch_size == b.batch_size &&
         a.seed == b.seed && a.eval_every == b.eval_every && a.log_every == b.log_every &&
         a.target_accuracy == b.target_accuracy && a.weight_decay == b.weight_decay &&
         SameSchedule(a.schedule, b.schedule) && a.rank == b.rank && a.world_size == b.world_size &&
         a.eval_batch_size == b.eval_batch_size && a.fail_on_divergence == b.fail_on_divergence &&
         a.early_stopping == b.early_stopping;
}

bool SameOptimizer(const optim::OptimizerOptions& a, const optim::OptimizerOptions& b) {
  return a.type == b.type && a.momentum == b.momentum && a.nesterov == b.nesterov &&
         a.beta1 == b.beta1 && a.beta2 == b.beta2 && a.eps == b.eps &&
         a.initial_accumulator == b.initial_accumulator && a.alpha == b.alpha && a.beta == b.beta &&
         a.l1 == b.l1 && a.l2 == b.l2;
}

}  // namespace

bool JobConfig::operator==(const JobConfig& other) const {
  return name == other.name && source_path == other.source_path && tags == other.tags &&
         data == other.data && model == other.model && sparse_model == other.sparse_model &&
         SameTrain(train, other.train) && threads == other.threads &&
         precision == other.precision && memory_limit == other.memory_limit &&
         clip_norm == other.clip_norm && SameOptimizer(optimizer, other.optimizer) &&
         lbfgs == other.lbfgs && sample_rows == other.sample_rows && cluster == other.cluster &&
         slurm == other.slurm && checkpoint == other.checkpoint && priority == other.priority &&
         max_restarts == other.max_restarts;
}

std::optional<train::EarlyStoppingMetric> BestModelMetric(const JobConfig& job) {
  if (job.cluster.model_parallel > 1) return std::nullopt;
  if (job.data.sparse && job.cluster.mode == ClusterMode::kAsync) return std::nullopt;
  if (job.train.early_stopping.enabled()) return job.train.early_stopping.metric;
  return job.checkpoint.keep_best;
}

train::TrainOptions TrainOptionsOf(const JobConfig& job) {
  train::TrainOptions options = job.train;
  if (const std::optional<train::EarlyStoppingMetric> best = BestModelMetric(job)) {
    options.keep_best = true;
    options.early_stopping.metric = *best;
  }
  return options;
}

std::string_view DataFormatName(DataFormat format) { return kFormats.Name(format); }
std::string_view SyntheticKindName(SyntheticKind kind) { return kSyntheticKinds.Name(kind); }
std::string_view AllReduceName(AllReduce kind) { return kAllReduces.Name(kind); }
std::string_view TransportName(Transport transport) { return kTransports.Name(transport); }
std::string_view HierarchyName(Hierarchy hierarchy) { return kHierarchies.Name(hierarchy); }
std::string_view LrScalingName(LrScaling scaling) { return kLrScalings.Name(scaling); }
std::string_view PlacementPolicyName(PlacementPolicy policy) { return kPlacements.Name(policy); }
std::string_view SchedulerName(Scheduler scheduler) { return kSchedulers.Name(scheduler); }
Result<Scheduler> ParseScheduler(std::string_view name) {
  return kSchedulers.Parse(name, "scheduler");
}
std::string_view SchedulerChoices() { return kSchedulers.choices; }
Result<DataFormat> ParseDataFormat(std::string_view name) {
  return kFormats.Parse(name, "data format");
}
Result<SyntheticKind> ParseSyntheticKind(std::string_view name) {
  return kSyntheticKinds.Parse(name, "synthetic data kind");
}
std::string_view DataFormatChoices() { return kFormats.choices; }
std::string_view SyntheticKindChoices() { return kSyntheticKinds.choices; }
std::string_view AllReduceChoices() { return kAllReduces.choices; }
std::string_view TransportChoices() { return kTransports.choices; }
std::string_view HierarchyChoices() { return kHierarchies.choices; }
std::string_view LrScalingChoices() { return kLrScalings.choices; }
std::string_view PlacementPolicyChoices() { return kPlacements.choices; }
Result<AllReduce> ParseAllReduce(std::string_view name) {
  return kAllReduces.Parse(name, "all-reduce");
}
Result<Transport> ParseTransport(std::string_view name) {
  return kTransports.Parse(name, "transport");
}
Result<Hierarchy> ParseHierarchy(std::string_view name) {
  return kHierarchies.Parse(name, "hierarchy");
}
Result<LrScaling> ParseLrScaling(std::string_view name) {
  return kLrScalings.Parse(name, "learning-rate scaling");
}

Result<PlacementPolicy> ParsePlacementPolicy(std::string_view name) {
  return kPlacements.Parse(name, "placement");
}

float ScaledLearningRate(const JobConfig& job) {
  const float lr = job.train.schedule.lr;
  if (!TraitsOf(job.cluster.mode).scales_lr) return lr;
  const auto n = static_cast<float>(job.cluster.workers);
  switch (job.cluster.lr_scaling) {
    case LrScaling::kLinear:
      return lr * n;
    case LrScaling::kSqrt:
      return lr * std::sqrt(n);
    case LrScaling::kNone:
      break;
  }
  return lr;
}

}  // namespace dtrain::config
