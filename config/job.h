// JobConfig: a job file (job.toml) as plain structs, every key with its default filled in.
//
//   LoadResult r = LoadJobFile("job.toml", {"train.epochs=1"});      // config/job_file.h
//   if (!r.ok()) { for (auto& d : r.diagnostics) std::cerr << FormatDiagnostic(d) << "\n"; }
//
// The key names are the product's interface (see man/dtrain-job.toml.5). Relative paths in
// [data] are resolved against the job file's directory and stored absolute. Plain value types;
// the name functions are safe for concurrent use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/compress/compression_plan.h"
#include "core/data/augment.h"
#include "core/math/precision.h"
#include "core/model/partition_plan.h"
#include "core/model/spec.h"
#include "core/optim/lbfgs.h"
#include "core/optim/optimizer.h"
#include "core/sparse/sparse_model.h"
#include "core/status.h"
#include "core/train/trainer.h"

namespace dtrain::config {

enum class DataFormat { kIdx, kCsv, kLibsvm, kNpy, kSynthetic };
enum class SyntheticKind { kBlobs, kLinear };
// kSandblaster: L-BFGS with a coordinator, parameter shards that hold its vectors and workers that
// compute work units (core/dist/sandblaster_protocol.md). What each mode is and does: its row in
// config/mode_traits.h.
enum class ClusterMode { kSingle, kSync, kAsync, kLocal, kSandblaster };
enum class AllReduce { kRing, kPs };  // how mode "sync" averages gradients
// What carries a ring's links: shared memory between processes of one host, TCP otherwise (auto),
// or always TCP.
enum class Transport { kAuto, kTcp };
// How sync ring replicas, several on each of several hosts, sum their gradients: within each host
// first, then across hosts, where the placement allows it (kAuto); or one flat ring (kFlat).
enum class Hierarchy { kAuto, kFlat };
enum class LrScaling { kNone, kLinear, kSqrt };
// Where a job's processes run when it names no hosts: all on the accepting daemon's host (pack),
// or round-robin over it and its peers that are up (spread).
enum class PlacementPolicy {
  kPack,
  kSpread
};  // of optimizer.lr with the worker count (sync, local)
// Who places a job's processes: the accepting daemon, on its host and its peers (daemon), or
// Slurm, one allocation per attempt with a task per process (slurm; see [slurm]).
enum class Scheduler { kDaemon, kSlurm };

struct DataConfig {
  DataFormat format = DataFormat::kIdx;
  std::string train;         // idx: images; csv/libsvm: the file; npy: features (.npy) or .npz
  std::string train_labels;  // idx, npy (a .npy; with a .npz train, optional)
  std::string test;          // optional held-out set
  std::string test_labels;   // idx, npy (as train_labels)
  // npy: the arrays of a .npz (its members <name>.npy) that hold the features and the labels.
  std::string features_array = "x", labels_array = "y";
  // csv
  bool header = true;
  std::string label_column;  // by name (needs header); empty: label_index
  int label_index = -1;      // -1: last column
  char delimiter = ',';
  // libsvm: the feature count (required unless sparse); csv/idx: inferred when 0. Sparse: up
  // to data::kMaxSparseFeatures, 0 for the largest index the training file uses.
  std::int64_t features = 0;
  // libsvm kept sparse (data::SparseRows) and trained by a sparse model (`JobConfig::sparse_model`,
  // core/sparse) whose parameters exist only for the features the data touches.
  bool sparse = false;
  int hash_bits = 0;  // sparse: every feature name hashed into [0, 2^hash_bits); 0: no hashing
  // sparse: the training file read a block of about stream_block_mib MiB at a time, never whole
  // (core/sparse/streamed_batches.h has the rule).
  bool stream = false;
  double stream_block_mib = 64.0;
  // Scaling applied a batch at a time: divide by `scale`, or standardise on the training set.
  bool standardize = false;
  float scale = 1.0f;                // default 255 for idx, 1 otherwise
  double validation_fraction = 0.0;  // held out of train when > 0 (used for eval if no test)
  // synthetic
  SyntheticKind synthetic = SyntheticKind::kBlobs;
  std::int64_t rows = 10000;
  std::int64_t test_rows = 2000;
  int classes = 3;
  float noise = 1.0f;  // blobs: spread; linear: noise std
  std::uint64_t data_seed = 1;
  // Training batches of images: random crop with zero padding, horizontal flip.
  data::AugmentOptions augment;

  bool operator==(const DataConfig&) const = default;
};

struct ClusterConfig {
  int workers = 1;
  ClusterMode mode = ClusterMode::kSingle;
  AllReduce allreduce = AllReduce::kRing;  // sync
  Transport transport = Transport::kAuto;  // ring and worker-shard links: shm on one host
  bool checksum = true;                    // CRC-32 of every float message sent over TCP
  int servers = 1;                         // parameter-server shards: sync with ps, and async
  int push_every = 1;                      // async: steps between gradient pushes
  int fetch_every = 1;                     // async: steps between parameter fetches
  int max_staleness = 0;           // async: clocks ahead of the slowest worker; 0 = unbounded
  int average_every = 8;           // local: steps between parameter averages
  bool average_optimizer = false;  // local: average the optimizer state too
  LrScaling lr_scaling = LrScaling::kNone;
  double timeout_seconds = 60.0;  // every wait for a peer, shard or rendezvous
  // A process that sends its coordinator nothing (not even a heartbeat) for this long is taken
  // for dead: killed, and the attempt recovers (worker heartbeats go every fifth of it, <= 1 s).
  double heartbeat_timeout = 5.0;
  PlacementPolicy placement = PlacementPolicy::kPack;
  Scheduler scheduler = Scheduler::kDaemon;
  std::vector<std::string> hosts;  // node names: process r runs on hosts[r % size]
  // Model parallelism: each replica is `model_parallel` processes, its partitions (layers or
  // tensor); `micro_batches` flow through a "layers" pipeline at once.
  int model_parallel = 1;
  model::PartitionKind partition = model::PartitionKind::kLayers;
  int micro_batches = 1;
  // Sandblaster: work units per pass (0: 10 per worker), and the fraction of a pass's units done
  // after which backup copies of the units still running go to free workers (1: none).
  int work_units = 0;
  double backup_after = 0.8;
  // How sync ring replicas exchange their gradients (config/compression_section.h): "none" sends
  // them whole.
  compress::Settings compression;
  // Overlap: sync ring replicas exchange their gradient (compressed or not) in buckets of at least
  // this many bytes (whole layers, the last layer's first) while the backward pass computes the
  // layers below; 0: the whole gradient after the pass. Applies where OverlapApplies().
  std::uint64_t bucket_bytes = kDefaultBucketBytes;
  static constexpr std::uint64_t kDefaultBucketBytes = 4u << 20;
  // Whether sync ring replicas sum within each host before they send across hosts
  // (config/hierarchy_key.h).
  Hierarchy hierarchy = Hierarchy::kAuto;
  // Elastic jobs (ElasticApplies: sync on the ring or on parameter servers, local): the fewest
  // replicas the job trains with. A lost replica leaves the others training (they regroup, the
  // global batch of workers x batch_size kept) while at least this many remain; the daemon starts
  // a replacement that joins at a step boundary. 0: not elastic (every loss restarts the attempt
  // from its checkpoint).
  int min_workers = 0;
  // Sync jobs on one parameter server: each step applies the first workers - backup_workers
  // gradients to arrive; a dropped replica's rows are served again at the next step (every row
  // once per epoch). 0: every step waits for every replica.
  int backup_workers = 0;

  // Elastic jobs (ElasticApplies): the most replicas the job trains with. The daemon grows a
  // running job beyond workers toward it while cores are free (or Slurm grants them); the global
  // batch stays workers x batch_size, so members above workers only take smaller shares. 0: workers
  // (the job grows no further).
  int max_workers = 0;

  // Whether a lost replica is carried on without, or the job may grow beyond workers
  // (min_workers set below workers, or max_workers above).
  bool Elastic() const { return FewestMembers() < workers || MostMembers() > workers; }
  // The fewest and the most replicas the job trains with: its ranks are 0 .. MostMembers() - 1.
  int FewestMembers() const { return min_workers > 0 ? min_workers : workers; }
  int MostMembers() const { return max_workers > workers ? max_workers : workers; }
  // Whether backup_workers applies: mode "sync" on one parameter server (allreduce "ps",
  // servers = 1) with whole replicas and uncompressed gradients.
  bool BackupWorkersApply() const;
  // Shards of each partition, where a mode uses parameter servers (config/mode_traits.h).
  int Servers() const;
  // Processes the job runs (config/job_layout.h): every replica's partitions, then every
  // partition's shards, then a Sandblaster job's coordinator.
  int Trainers() const { return MostMembers() * model_parallel; }
  int Shards() const { return Servers() * model_parallel; }
  int Coordinators() const;
  int Processes() const { return Trainers() + Shards() + Coordinators(); }
  int WorkUnits() const { return work_units > 0 ? work_units : 10 * workers; }
  // Whether the replicas all-reduce their gradients on the ring: mode "sync" with allreduce
  // "ring", whole replicas (model_parallel = 1). Where hierarchy applies.
  bool SumsOnTheRing() const;
  // Whether the replicas could regroup on the ring (an elastic job's): whole replicas
  // (model_parallel = 1) whose only exchange is the ring's — SumsOnTheRing, or mode "local",
  // whose parameter averages go round it.
  bool RegroupsOnTheRing() const;
  // Whether the whole replicas of mode "sync" sum their gradients on parameter servers (allreduce
  // "ps", model_parallel = 1; elastic on any number of servers).
  bool SumsOnShards() const;
  // Whether min_workers and max_workers apply (the one rule, for config and runner):
  // RegroupsOnTheRing, or SumsOnShards on any number of servers (backup workers only on one:
  // BackupWorkersApply), with uncompressed exchanges (a regroup cannot carry compression's
  // residuals over); the daemon's scheduler or Slurm's (daemon/server/slurm_growth.cc) places them.
  bool ElasticApplies() const;
  // Whether bucket_bytes applies: SumsOnTheRing, compressed gradients or not.
  bool OverlapApplies() const;

  bool operator==(const ClusterConfig&) const = default;
};

// [slurm]: what the allocation of a job with cluster.scheduler = "slurm" asks Slurm for, beyond
// the tasks and cores dtrain derives from the job. Empty strings are left to Slurm's defaults.
struct SlurmConfig {
  std::string partition;
  std::string account;
  std::string time_limit;  // Slurm's forms: "MM", "HH:MM:SS", "D-HH", "D-HH:MM:SS", ...
  std::string qos;
  std::vector<std::string> options;  // further salloc options, one argument each

  bool operator==(const SlurmConfig&) const = default;
};

struct CheckpointConfig {
  std::int64_t every_steps = 0;  // 0: off
  double every_seconds = 0.0;    // 0: off
  int keep = 3;                  // newest kept
  // checkpoint.keep_best: the metric that judges the job's best model (BestModelMetric); unset:
  // none unless train.early_stopping is on.
  std::optional<train::EarlyStoppingMetric> keep_best;

  bool operator==(const CheckpointConfig&) const = default;
};

// Ranges of JobConfig::priority and of the restart limits (the job's [restart] max_restarts and
// the daemon's [workers] max_restarts, its default).
inline constexpr int kMinPriority = -100;
inline constexpr int kMaxPriority = 100;
inline constexpr int kMaxRestartsLimit = 100;

// Where a job file wrote something: line and column, from 1.
struct SourcePlace {
  int line = 0, column = 0;
};

struct JobConfig {
  std::string name;
  std::string source_path;  // the job file, as given
  // Labels to find the job by (`dtrain list --tag`), in the order given (config/tags_key.h).
  std::vector<std::string> tags;
  DataConfig data;
  model::ModelSpec model;  // inputs/outputs 0 until the data is known (see ResolveModelShape)
  // data.sparse: the model instead of `model` (which then stays at its defaults). Softmax's
  // classes are the data's, set when it is read.
  sparse::SparseModelSpec sparse_model;
  // The type key of each of model.layers in the job file, for the errors found only once the
  // data gives the input shape. Not compared by ==: where a key was written is not the job.
  std::vector<SourcePlace> layer_places;
  train::TrainOptions train;
  int threads = 0;  // threads per replica; 0: auto (see config/thread_layout.h)
  // train.precision: the matrix products' (math/precision.h); kBf16 only where this host's CPU
  // multiplies bf16 natively (the file is refused at the key elsewhere).
  math::Precision precision = math::Precision::kFp32;
  // Address space of each of the job's processes, bytes (RLIMIT_AS); 0: unlimited.
  std::uint64_t memory_limit = 0;
  float clip_norm = 0.0f;  // 0: off
  optim::OptimizerOptions optimizer;
  // [optimizer] type = "lbfgs": L-BFGS's options, and the training rows its objective sums over
  // (0: all of them; otherwise a fixed sample of that many, drawn with train.seed).
  optim::LbfgsOptions lbfgs;
  std::int64_t sample_rows = 0;
  ClusterConfig cluster;
  SlurmConfig slurm;
  CheckpointConfig checkpoint;
  int priority = 0;       // [kMinPriority, kMaxPriority]; among queued jobs, higher runs first
  int max_restarts = -1;  // restarts after a failure, at most; -1: the daemon's default

  // Field by field, through the nested engine options too (they define no operator==).
  bool operator==(const JobConfig& other) const;
};

struct Diagnostic {
  std::string file;
  int line = 0;  // 0 when not tied to a place in the file (e.g. a --set override)
  int column = 0;
  std::string key;  // dotted: "train.batch_size"
  std::string message;
};

// "job.toml:12:3: train.batch_size: must be in [1, 1048576], got 0"
std::string FormatDiagnostic(const Diagnostic& d);

// Job-file names of the enums above ("idx", "blobs", "sync", ...); Parse* errors list the
// choices, *Choices() joins them for messages: "idx, csv, libsvm, synthetic".
// The metric a job's best model is judged by: train.early_stopping's when that is on, else
// checkpoint.keep_best's; none when neither is set, or where no process holds the whole model
// its evaluation judged (cluster.model_parallel > 1; a sparse model in async mode, whose shards
// take the other replicas' pushes while replica 0 evaluates), which early stopping allows and
// keep_best refuses.
std::optional<train::EarlyStoppingMetric> BestModelMetric(const JobConfig& job);
// The job's [train] as every training loop takes them (dense, sparse, L-BFGS): keep_best on and
// early_stopping.metric set to BestModelMetric's where the job keeps a best model.
train::TrainOptions TrainOptionsOf(const JobConfig& job);

std::string_view DataFormatName(DataFormat format);
std::string_view SyntheticKindName(SyntheticKind kind);
std::string_view ClusterModeName(ClusterMode mode);
std::string_view AllReduceName(AllReduce kind);
std::string_view TransportName(Transport transport);
std::string_view HierarchyName(Hierarchy hierarchy);
std::string_view LrScalingName(LrScaling scaling);
std::string_view PlacementPolicyName(PlacementPolicy policy);
std::string_view SchedulerName(Scheduler scheduler);
Result<DataFormat> ParseDataFormat(std::string_view name);
Result<SyntheticKind> ParseSyntheticKind(std::string_view name);
Result<ClusterMode> ParseClusterMode(std::string_view name);
Result<AllReduce> ParseAllReduce(std::string_view name);
Result<Transport> ParseTransport(std::string_view name);
Result<Hierarchy> ParseHierarchy(std::string_view name);
Result<LrScaling> ParseLrScaling(std::string_view name);
Result<PlacementPolicy> ParsePlacementPolicy(std::string_view name);
Result<Scheduler> ParseScheduler(std::string_view name);
std::string_view DataFormatChoices();
std::string_view SyntheticKindChoices();
std::string_view ClusterModeChoices();
std::string_view AllReduceChoices();
std::string_view TransportChoices();
std::string_view HierarchyChoices();
std::string_view LrScalingChoices();
std::string_view PlacementPolicyChoices();
std::string_view SchedulerChoices();

// optimizer.lr as the workers use it: scaled by cluster.lr_scaling in the sync and local modes.
float ScaledLearningRate(const JobConfig& job);

}  // namespace dtrain::config
