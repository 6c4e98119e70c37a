// The mode table: what each cluster.mode is, in one row per ClusterMode — its job-file name, the
// processes it runs, how its replicas exchange what they learn, who writes its checkpoints, what
// losing one of its processes costs, which optimizers and data it trains with, and which of the
// [cluster] keys are its own. Everything else (job files, layouts, the runner, the worker, the
// daemon's restart policy) asks the table instead of comparing modes, so a new mode is a new row
// plus its own engine and strategy files.
//
//   const ModeTraits& mode = TraitsOf(job.cluster.mode);
//   if (mode.exchange == Exchange::kSynchronous) ...;            // replicas hold equal parameters
//   if (CostOfLosing(job, rank) == LostProcess::kRestartAlone) ...;  // restart just that process
//   switch (EngineOf(job, rank)) { case Engine::kSteps: ...; }   // what that process runs
//
// Invariants: the table has exactly one row per ClusterMode, in enum order (checked at compile
// time); rows are constexpr data, so every function here is pure and safe for concurrent use.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "config/job.h"

namespace dtrain::config {

// How a mode's replicas combine their work.
enum class Exchange {
  kNone,             // single: one replica, its own optimizer
  kSynchronous,      // sync: every step, by ring all-reduce or parameter servers (allreduce)
  kAsynchronous,     // async: Downpour pushes and fetches against parameter servers
  kPeriodicAverage,  // local: local steps, parameters averaged over the ring now and then
  kWorkUnits,        // sandblaster: a coordinator hands work units to workers
};

// When a mode runs parameter-server shards (cluster.servers of them per partition).
enum class ServersRule { kNever, kAlways, kWithPsAllReduce };

// Which process sends the job's checkpoints (config/job_layout.h: WritesCheckpoints).
enum class CheckpointWriter { kReplicaZero, kCoordinator };

// What the loss of one process (its exit or its silence) costs the job: the whole attempt recovers
// (every process restarts from the last checkpoint), that process alone is restarted and rejoins
// the others, or it is killed and the others carry on without it.
enum class LostProcess { kRestartAll, kRestartAlone, kCarryOn };

// Whether a mode trains with optimizer.type = "lbfgs": refuses it, allows it, or runs only it.
enum class LbfgsRule { kRefused, kAllowed, kRequired };

// [cluster] keys that belong to some modes only: shown by `dtrain validate --resolved` only for
// those (config/job_format.cc). A bit set.
enum ModeKeys : unsigned {
  kNoModeKeys = 0,
  kAllReduceKey = 1u << 0,   // allreduce
  kServersKey = 1u << 1,     // servers, where the mode has shards
  kDownpourKeys = 1u << 2,   // push_every, fetch_every, max_staleness
  kAveragingKeys = 1u << 3,  // average_every, average_optimizer
  kWorkUnitKeys = 1u << 4,   // work_units, backup_after
  // compression and its keys, with model_parallel = 1 (sync's gradients on the ring or pushed
  // to parameter servers, async's pushes, local's averages; config/compression_section.h)
  kCompressionKeys = 1u << 5,
};

// What a mode's replicas exchange, for messages that say why a key does not apply to it
// ("averages parameters, not gradients").
std::string_view WhatItExchanges(Exchange exchange);

struct ModeTraits {
  ClusterMode mode;
  std::string_view name;  // cluster.mode's value in a job file
  bool several_workers;   // whether cluster.workers may exceed 1
  ServersRule servers;
  bool coordinator;  // one coordinator process after the shards
  Exchange exchange;
  bool scales_lr;  // cluster.lr_scaling applies (with the worker count)
  CheckpointWriter checkpoints;
  LostProcess lost_replica;  // what losing a trainer process costs (a shard or coordinator:
                             // always kRestartAll)
  LbfgsRule lbfgs;
  bool sparse;  // whether a sparse model (data.sparse) trains in this mode
  // The optimizer when the job file names none; unset: OptimizerOptions' own default.
  std::optional<optim::OptimizerType> default_optimizer;
  unsigned keys;  // ModeKeys
};

const ModeTraits& TraitsOf(ClusterMode mode);

// The modes whose row satisfies `pred`, quoted and joined for messages in table order:
// "\"single\" or \"sandblaster\"", "\"sync\", \"async\", \"local\" or \"sandblaster\"".
std::string QuotedModes(bool (*pred)(const ModeTraits&));

// What losing process `rank` of `job` costs; a sparse model's shards take no replica back, so
// a lost sparse replica restarts the whole attempt; an elastic job's replica
// (ClusterConfig::Elastic) restarts alone while the others regroup without it.
LostProcess CostOfLosing(const JobConfig& job, int rank);

// What one process of a job runs.
enum class Engine {
  kSteps,                   // a replica's training loop (TrainingSession and Trainer)
  kSparseSteps,             // a sparse model's training loop (data.sparse)
  kLbfgs,                   // L-BFGS in this process (mode "single")
  kSandblasterCoordinator,  // L-BFGS driving Sandblaster's shards and workers
  kSandblasterWorker,       // computes a Sandblaster coordinator's work units
  kParameterShard,          // serves a dense model's parameter range
  kSparseShard,             // serves a sparse model's keys
  kVectorShard,             // holds a range of Sandblaster's vectors
};
Engine EngineOf(const JobConfig& job, int rank);

}  // namespace dtrain::config
