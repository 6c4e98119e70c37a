#include "config/mode_traits.h"

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "config/job_layout.h"
#include "core/name_table.h"

namespace dtrain::config {
namespace {

using enum Exchange;
using enum ServersRule;
using enum CheckpointWriter;
using enum LostProcess;
using enum LbfgsRule;

constexpr std::size_t kModeCount = 5;

constexpr std::array<ModeTraits, kModeCount> kModes{{
    {.mode = ClusterMode::kSingle,
     .name = "single",
     .several_workers = false,
     .servers = kNever,
     .coordinator = false,
     .exchange = kNone,
     .scales_lr = false,
     .checkpoints = kReplicaZero,
     .lost_replica = kRestartAll,
     .lbfgs = kAllowed,
     .sparse = true,
     .default_optimizer = std::nullopt,
     .keys = kNoModeKeys},
    {.mode = ClusterMode::kSync,
     .name = "sync",
     .several_workers = true,
     .servers = kWithPsAllReduce,
     .coordinator = false,
     .exchange = kSynchronous,
     .scales_lr = true,
     .checkpoints = kReplicaZero,
     .lost_replica = kRestartAll,
     .lbfgs = kRefused,
     .sparse = true,  // on parameter servers only
     .default_optimizer = std::nullopt,
     .keys = kAllReduceKey | kServersKey | kCompressionKeys},
    {.mode = ClusterMode::kAsync,
     .name = "async",
     .several_workers = true,
     .servers = kAlways,
     .coordinator = false,
     .exchange = kAsynchronous,
     .scales_lr = false,
     .checkpoints = kReplicaZero,
     .lost_replica = kRestartAlone,
     .lbfgs = kRefused,
     .sparse = true,
     // Downpour's shards default to Adagrad (Dean et al. 2012); an explicit optimizer.type wins.
     .default_optimizer = optim::OptimizerType::kAdagrad,
     .keys = kServersKey | kDownpourKeys | kCompressionKeys},
    {.mode = ClusterMode::kLocal,
     .name = "local",
     .several_workers = true,
     .servers = kNever,
     .coordinator = false,
     .exchange = kPeriodicAverage,
     .scales_lr = true,
     .checkpoints = kReplicaZero,
     .lost_replica = kRestartAll,
     .lbfgs = kRefused,
     .sparse = false,
     .default_optimizer = std::nullopt,
     .keys = kAveragingKeys | kCompressionKeys},
    {.mode = ClusterMode::kSandblaster,
     .name = "sandblaster",
     .several_workers = true,
     .servers = kAlways,
     .coordinator = true,
     .exchange = kWorkUnits,
     .scales_lr = false,
     .checkpoints = kCoordinator,
     .lost_replica = kCarryOn,  // the coordinator hands its units to the others
     .lbfgs = kRequired,
     .sparse = false,
     .default_optimizer = std::nullopt,
     .keys = kWorkUnitKeys},
}};

constexpr bool InEnumOrder() {
  for (std::size_t i = 0; i < kModes.size(); ++i) {
    if (static_cast<std::size_t>(kModes[i].mode) != i) return false;
  }
  return true;
}
static_assert(InEnumOrder(), "one row per ClusterMode, in enum order");

// The job-file names as a NameTable, for ClusterModeName/Parse/Choices (config/job.h).
const NameTable<ClusterMode, kModeCount>& ModeNames() {
  static const std::string choices = [] {
    std::string joined;
    for (const ModeTraits& row : kModes) {
      if (!joined.empty()) joined += ", ";
      joined += row.name;
    }
    return joined;
  }();
  static const NameTable<ClusterMode, kModeCount> table = [] {
    NameTable<ClusterMode, kModeCount> t{};
    for (std::size_t i = 0; i < kModes.size(); ++i) t.entries[i] = {kModes[i].mode, kModes[i].name};
    t.choices = choices;
    return t;
  }();
  return table;
}

}  // namespace

const ModeTraits& TraitsOf(ClusterMode mode) { return kModes[static_cast<std::size_t>(mode)]; }

std::string QuotedModes(bool (*pred)(const ModeTraits&)) {
  std::vector<std::string_view> names;
  for (const ModeTraits& row : kModes) {
    if (pred(row)) names.push_back(row.name);
  }
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out.append(1, '"').append(names[i]).append(1, '"');
  }
  return out;
}

std::string_view ClusterModeName(ClusterMode mode) { return ModeNames().Name(mode); }
Result<ClusterMode> ParseClusterMode(std::string_view name) {
  return ModeNames().Parse(name, "cluster mode");
}
std::string_view ClusterModeChoices() { return ModeNames().choices; }

int ClusterConfig::Servers() const {
  switch (TraitsOf(mode).servers) {
    case kNever:
      return 0;
    case kAlways:
      return servers;
    case kWithPsAllReduce:
      return allreduce == AllReduce::kPs ? servers : 0;
  }
  return 0;
}

std::string_view WhatItExchanges(Exchange exchange) {
  switch (exchange) {
    case Exchange::kNone:
      return "trains one replica, with no gradients to exchange";
    case Exchange::kSynchronous:
      return "averages its replicas' gradients every step";
    case Exchange::kAsynchronous:
      return "pushes its gradients to parameter servers";
    case Exchange::kPeriodicAverage:
      return "averages parameters, not gradients";
    case Exchange::kWorkUnits:
      return "pushes its work units' gradients to L-BFGS's shards";
  }
  return "exchanges its gradients another way";
}

bool ClusterConfig::SumsOnTheRing() const {
  return TraitsOf(mode).exchange == Exchange::kSynchronous && allreduce == AllReduce::kRing &&
         model_parallel == 1;
}

bool ClusterConfig::RegroupsOnTheRing() const {
  return SumsOnTheRing() ||
         (TraitsOf(mode).exchange == Exchange::kPeriodicAverage && model_parallel == 1);
}

bool ClusterConfig::SumsOnShards() const {
  return TraitsOf(mode).exchange == Exchange::kSynchronous && allreduce == AllReduce::kPs &&
         model_parallel == 1;
}

bool ClusterConfig::ElasticApplies() const {
  const bool regroups = RegroupsOnTheRing() || SumsOnShards();
  return regroups && compression.method == compress::Method::kNone;
}

bool ClusterConfig::OverlapApplies() const { return SumsOnTheRing(); }

bool ClusterConfig::BackupWorkersApply() const {
  return TraitsOf(mode).exchange == Exchange::kSynchronous && allreduce == AllReduce::kPs &&
         servers == 1 && model_parallel == 1 && compression.method == compress::Method::kNone;
}

int ClusterConfig::Coordinators() const { return TraitsOf(mode).coordinator ? 1 : 0; }

LostProcess CostOfLosing(const JobConfig& job, int rank) {
  if (RoleOf(job.cluster, rank).kind != ProcessRole::Kind::kReplica) return kRestartAll;
  // The others regroup on a smaller ring; the replacement joins them.
  if (job.cluster.Elastic()) return kRestartAlone;
  const LostProcess cost = TraitsOf(job.cluster.mode).lost_replica;
  return cost == kRestartAlone && job.data.sparse ? kRestartAll : cost;
}

Engine EngineOf(const JobConfig& job, int rank) {
  const ModeTraits& mode = TraitsOf(job.cluster.mode);
  switch (RoleOf(job.cluster, rank).kind) {
    case ProcessRole::Kind::kCoordinator:
      return Engine::kSandblasterCoordinator;
    case ProcessRole::Kind::kShard:
      if (job.data.sparse) return Engine::kSparseShard;
      return mode.exchange == kWorkUnits ? Engine::kVectorShard : Engine::kParameterShard;
    case ProcessRole::Kind::kReplica:
      break;
  }
  if (mode.exchange == kWorkUnits) return Engine::kSandblasterWorker;
  if (job.data.sparse) return Engine::kSparseSteps;
  if (job.optimizer.type == optim::OptimizerType::kLbfgs) return Engine::kLbfgs;
  return Engine::kSteps;
}

}  // namespace dtrain::config
