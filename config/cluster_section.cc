#include "config/cluster_section.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/compression_section.h"
#include "config/hierarchy_key.h"
#include "config/mode_traits.h"

namespace dtrain::config::internal {
namespace {

// Upper limits far beyond any sensible job (see job_file.cc).
constexpr std::int64_t kMaxWorkers = 1024;
constexpr std::int64_t kMaxPartitions = 64;
constexpr std::int64_t kMaxMicroBatches = 4096;
constexpr std::int64_t kMaxUnits = 1'000'000;  // cluster.work_units
constexpr std::int64_t kMaxEvery = 1000000;    // cluster.*_every and max_staleness
constexpr int kMaxMaskedWorkers = 64;          // backup workers: a step's mask is 64 bits

// cluster.hosts: node names, as the daemons' [cluster] name (or host names) give them.
void ReadHosts(TableReader& r, std::vector<std::string>* hosts) {
  const toml::node* node = r.Find("hosts");
  if (node == nullptr) return;
  const toml::array* list = node->as_array();
  if (list == nullptr || list->empty()) {
    r.Report(*node, "hosts", "must be a non-empty array of node names, such as [\"node1\"]");
    return;
  }
  std::vector<std::string> names;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const toml::node& item = (*list)[i];
    const std::optional<std::string_view> name = item.value<std::string_view>();
    const bool valid = name && !name->empty() && name->size() <= 253 &&
                       name->find_first_not_of(
                           "abcdefghijklmnopqrstuvwxyz"
                           "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") == std::string_view::npos;
    if (!valid) {
      r.Report(item, "hosts",
               "host " + std::to_string(i + 1) +
                   " must be a node name (letters, digits, dots and hyphens)");
      continue;
    }
    names.emplace_back(*name);
  }
  if (!r.Failed("hosts")) *hosts = std::move(names);
}

constexpr std::uint64_t kMaxBucketBytes = 1ull << 30;  // cluster.bucket_bytes

// cluster.backup_workers, read once every key it is held against is (the layout, compression):
// below the workers, and only where ClusterConfig::BackupWorkersApply.
void ReadBackupWorkers(TableReader& r, ClusterConfig* c) {
  const toml::node* backups = r.Int("backup_workers", 0, kMaxWorkers - 1, &c->backup_workers);
  const bool layout_known = !r.Failed("workers") && !r.Failed("mode") && !r.Failed("allreduce") &&
                            !r.Failed("servers") && !r.Failed("model_parallel") &&
                            !r.Failed("compression");
  if (backups == nullptr || r.Failed("backup_workers") || !layout_known) return;
  const std::string is = "is " + std::to_string(c->backup_workers) + ", but ";
  const Exchange exchange = TraitsOf(c->mode).exchange;
  std::string why;
  if (exchange != Exchange::kSynchronous) {
    why = "mode \"" + std::string(ClusterModeName(c->mode)) + "\" " +
          std::string(WhatItExchanges(exchange)) +
          ": backup workers are for the synchronous data-parallel step of mode \"sync\"";
  } else if (c->model_parallel > 1) {
    why = "model_parallel = " + std::to_string(c->model_parallel) +
          " splits each replica's gradient among its partitions: backup workers are for a "
          "synchronous data-parallel step of whole replicas (model_parallel = 1)";
  } else if (c->allreduce == AllReduce::kRing) {
    why =
        "allreduce \"ring\" cannot finish a step before every replica has sent its part (each "
        "chunk passes through every replica), so it cannot go on without its slowest: backup "
        "workers need allreduce = \"ps\" (a ring job that loses a replica regroups instead: "
        "min_workers)";
  } else if (c->servers > 1) {
    why = "servers = " + std::to_string(c->servers) +
          ": every shard would have to agree which replicas' gradients each step took, and a late "
          "replica could fetch ranges of different steps from different shards: backup workers "
          "need servers = 1";
  } else if (c->compression.method != compress::Method::kNone) {
    why = "cluster.compression \"" + std::string(compress::MethodName(c->compression.method)) +
          "\" keeps an error-feedback residual in each replica, which a dropped push would lose "
          "or count twice: backup workers need compression = \"none\"";
  } else if (c->backup_workers >= c->workers) {
    why = "the job has only cluster.workers = " + std::to_string(c->workers) +
          ": each step takes the first workers - backup_workers gradients, at least one";
  } else if (c->backup_workers > 0 && c->workers > kMaxMaskedWorkers) {
    why = "cluster.workers = " + std::to_string(c->workers) +
          ": the parameter server names the replicas each step took in one 64-bit mask, so "
          "backup workers need at most " +
          std::to_string(kMaxMaskedWorkers) + " workers";
  }
  if (!why.empty()) r.Report(*backups, "backup_workers", is + why);
}

}  // namespace

void ReadCluster(TableReader& r, ClusterConfig* c) {
  const toml::node* workers = r.Int("workers", 1, kMaxWorkers, &c->workers);
  r.Enum("mode", ParseClusterMode, ClusterModeChoices(), &c->mode);
  if (workers != nullptr && c->workers > 1 && !TraitsOf(c->mode).several_workers &&
      !r.Failed("mode")) {
    r.Report(*workers, "workers",
             "is " + std::to_string(c->workers) + ", but cluster.mode \"" +
                 std::string(ClusterModeName(c->mode)) + "\" trains one worker: use mode " +
                 QuotedModes([](const ModeTraits& m) { return m.several_workers; }) +
                 " for several");
  }
  r.Enum("allreduce", ParseAllReduce, AllReduceChoices(), &c->allreduce);
  r.Int("servers", 1, kMaxWorkers, &c->servers);
  r.Int("push_every", 1, kMaxEvery, &c->push_every);
  r.Int("fetch_every", 1, kMaxEvery, &c->fetch_every);
  r.Int("max_staleness", 0, kMaxEvery, &c->max_staleness);
  r.Int("average_every", 1, kMaxEvery, &c->average_every);
  r.Bool("average_optimizer", &c->average_optimizer);
  r.Enum("lr_scaling", ParseLrScaling, LrScalingChoices(), &c->lr_scaling);
  r.Number("timeout_seconds", Closed(0.1, 86400), &c->timeout_seconds);
  r.Number("heartbeat_timeout", Closed(0.2, 3600), &c->heartbeat_timeout);
  r.Enum("placement", ParsePlacementPolicy, PlacementPolicyChoices(), &c->placement);
  ReadHosts(r, &c->hosts);
  r.Enum("transport", ParseTransport, TransportChoices(), &c->transport);
  r.Bool("checksum", &c->checksum);
  r.Int("model_parallel", 1, kMaxPartitions, &c->model_parallel);
  r.Enum("partition", model::ParsePartitionKind, model::PartitionKindChoices(), &c->partition);
  r.Int("micro_batches", 1, kMaxMicroBatches, &c->micro_batches);
  r.Int("work_units", 0, kMaxUnits, &c->work_units);
  r.Number("backup_after", Closed(0, 1), &c->backup_after);
  ReadCompression(r, c);
  // Like the other modes' keys, read by every job and used where OverlapApplies().
  r.Size("bucket_bytes", 0, kMaxBucketBytes, &c->bucket_bytes);
  ReadHierarchy(r, c);
  r.Int("min_workers", 1, kMaxWorkers, &c->min_workers);
  r.Int("max_workers", 1, kMaxWorkers, &c->max_workers);
  ReadBackupWorkers(r, c);
}

namespace {

// Why `c`'s replicas cannot regroup (neither RegroupsOnTheRing nor SumsOnShards), naming the key
// that rules it out.
std::string WhyNoRegroup(const ClusterConfig& c) {
  switch (TraitsOf(c.mode).exchange) {
    case Exchange::kPeriodicAverage:
      return "model_parallel = " + std::to_string(c.model_parallel) +
             " splits each replica among its partitions";
    case Exchange::kSynchronous:
      return "model_parallel = " + std::to_string(c.model_parallel) +
             " splits each replica's gradient among its partitions";
    default:
      return WhyNotOnTheRing(c);
  }
}

// Refuses `key` (set to `value`) where the job cannot train elastically (where
// ClusterConfig::ElasticApplies does not hold, saying which key rules it out), or for
// `too_many_or_few` when that is not empty (after "is VALUE, but ").
void RefuseWhereNotElastic(const ClusterConfig& c, TableReader& cluster, const std::string& key,
                           int value, const std::string& too_many_or_few) {
  const toml::node* node = cluster.Find(key);
  const std::string is = "is " + std::to_string(value) + ", but ";
  const bool layout_known =
      !cluster.Failed("mode") && !cluster.Failed("allreduce") && !cluster.Failed("model_parallel");
  if (!layout_known) return;
  const std::string elastic =
      "elastic training is for mode \"sync\" with allreduce \"ring\" or \"ps\", or mode "
      "\"local\", with model_parallel = 1: ";
  if (!c.RegroupsOnTheRing() && !c.SumsOnShards()) {
    cluster.Report(*node, key, is + elastic + WhyNoRegroup(c));
  } else if (c.SumsOnShards() && c.MostMembers() > kMaxMaskedWorkers &&
             !cluster.Failed("workers") && !cluster.Failed("max_workers")) {
    // The shard serves a membership as backup workers' steps, whose masks are 64 bits.
    cluster.Report(*node, key,
                   is + "an elastic job on a parameter server trains at most " +
                       std::to_string(kMaxMaskedWorkers) +
                       " replicas (its steps name them in one " +
                       "64-bit mask), and this one has up to " + std::to_string(c.MostMembers()));
  } else if (!too_many_or_few.empty()) {
    cluster.Report(*node, key, is + too_many_or_few);
  } else if (c.compression.method != compress::Method::kNone && !cluster.Failed("compression")) {
    // The error-feedback residuals (and PowerSGD's factors) live in each replica's strategy and
    // are handed over only through the ring, which a regroup no longer has.
    cluster.Report(*node, key,
                   is + "cluster.compression \"" +
                       std::string(compress::MethodName(c.compression.method)) +
                       "\" keeps residuals a regroup cannot carry over: elastic jobs exchange "
                       "whole gradients or parameters (compression = \"none\")");
  }
}

}  // namespace

void CheckElastic(const ClusterConfig& c, TableReader& cluster) {
  const bool workers_known = !cluster.Failed("workers");
  if (cluster.Find("min_workers") != nullptr && !cluster.Failed("min_workers")) {
    const bool too_many = c.min_workers > c.workers && workers_known;
    RefuseWhereNotElastic(
        c, cluster, "min_workers", c.min_workers,
        too_many ? "the job has only cluster.workers = " + std::to_string(c.workers) : "");
  }
  const toml::node* max = cluster.Find("max_workers");
  if (max == nullptr || cluster.Failed("max_workers") || !workers_known ||
      c.max_workers == c.workers) {
    return;
  }
  if (c.max_workers < c.workers) {
    cluster.Report(*max, "max_workers",
                   "is " + std::to_string(c.max_workers) + ", fewer than cluster.workers = " +
                       std::to_string(c.workers) + ": the job grows from workers toward it");
    return;
  }
  RefuseWhereNotElastic(c, cluster, "max_workers", c.max_workers, "");
}

void CheckModelParallel(const JobConfig& job, TableReader& cluster) {
  const ClusterConfig& c = job.cluster;
  const toml::node* micro = cluster.Find("micro_batches");
  if (micro != nullptr && c.micro_batches > 1 && !cluster.Failed("micro_batches")) {
    if (c.model_parallel == 1 || c.partition != model::PartitionKind::kLayers) {
      cluster.Report(*micro, "micro_batches",
                     "splits a pipeline's batch: it needs partition = \"layers\" and "
                     "model_parallel > 1");
    } else if (c.micro_batches > job.train.batch_size) {
      cluster.Report(*micro, "micro_batches",
                     "is " + std::to_string(c.micro_batches) + ", more than train.batch_size (" +
                         std::to_string(job.train.batch_size) + ")");
    }
  }
  const toml::node* parallel = cluster.Find("model_parallel");
  if (parallel == nullptr || c.model_parallel == 1 || cluster.Failed("model_parallel")) return;
  const int k = c.model_parallel;
  const std::string is = "is " + std::to_string(k) + ", but ";
  const model::ModelSpec& m = job.model;
  if (m.type != model::ModelType::kMlp) {
    cluster.Report(*parallel, "model_parallel",
                   is + "only an MLP (model.type = \"mlp\") has layers to split");
  } else if (c.partition == model::PartitionKind::kLayers &&
             static_cast<int>(m.hidden.size()) + 1 < k) {
    cluster.Report(*parallel, "model_parallel",
                   is + "the model has " + std::to_string(m.hidden.size() + 1) +
                       " layers to split (partition = \"layers\" gives each partition at least "
                       "one)");
  } else if (c.partition == model::PartitionKind::kTensor) {
    for (std::size_t l = 0; l < m.hidden.size(); ++l) {
      if (m.hidden[l] < k) {
        cluster.Report(*parallel, "model_parallel",
                       is + "hidden layer " + std::to_string(l + 1) + " has " +
                           std::to_string(m.hidden[l]) +
                           " units to split (partition = \"tensor\" gives each partition at "
                           "least one of every layer)");
        return;
      }
    }
  }
  if (job.clip_norm > 0.0f) {
    cluster.Report(*parallel, "model_parallel",
                   is + "train.clip_norm would clip each partition's gradient by its own norm: "
                        "gradient clipping is not available with model parallelism");
  }
}

// L-BFGS is a batch method: one process minimises the full-batch objective (mode "single"), or
// Sandblaster's processes together; the model is not split. Sandblaster runs L-BFGS only (the mode
// table's lbfgs rule).
void CheckLbfgs(const JobConfig& job, TableReader& optimizer, TableReader& cluster) {
  const toml::node* mode = cluster.Find("mode");
  const LbfgsRule rule = TraitsOf(job.cluster.mode).lbfgs;
  if (mode != nullptr && rule == LbfgsRule::kRequired && !cluster.Failed("mode") &&
      job.optimizer.type != optim::OptimizerType::kLbfgs && !optimizer.Failed("type")) {
    cluster.Report(*mode, "mode",
                   "is \"" + std::string(ClusterModeName(job.cluster.mode)) +
                       "\", which runs L-BFGS: set optimizer.type = \"lbfgs\"");
  }
  const toml::node* type = optimizer.Find("type");
  if (type == nullptr || job.optimizer.type != optim::OptimizerType::kLbfgs ||
      optimizer.Failed("type")) {
    return;
  }
  const std::string is = "is \"lbfgs\", a batch method, but ";
  if (rule == LbfgsRule::kRefused) {
    optimizer.Report(*type, "type",
                     is + "cluster.mode is \"" + std::string(ClusterModeName(job.cluster.mode)) +
                         "\": L-BFGS runs in mode " + QuotedModes([](const ModeTraits& m) {
                           return m.lbfgs != LbfgsRule::kRefused;
                         }));
  } else if (job.cluster.model_parallel > 1) {
    optimizer.Report(*type, "type",
                     is + "cluster.model_parallel splits the model: L-BFGS "
                          "trains a whole model");
  } else if (job.data.augment.enabled()) {
    optimizer.Report(*type, "type",
                     is + "data.augment_* changes the training images every step: L-BFGS needs "
                          "one fixed objective");
  } else {
    for (std::size_t i = 0; i < job.model.layers.size(); ++i) {
      const model::LayerSpec& layer = job.model.layers[i];
      const std::string which = "model.layers[" + std::to_string(i + 1) + "] is ";
      if (layer.kind == model::LayerKind::kDropout && layer.rate > 0.0f) {
        optimizer.Report(*type, "type",
                         is + which +
                             "a dropout layer, whose random masks would change the objective "
                             "between evaluations: remove it for L-BFGS");
        return;
      }
      if (layer.kind == model::LayerKind::kBatchNorm) {
        optimizer.Report(*type, "type",
                         is + which +
                             "a batchnorm layer, whose batch statistics would change the "
                             "objective with the rows summed at once: remove it for L-BFGS");
        return;
      }
    }
  }
}

}  // namespace dtrain::config::internal
