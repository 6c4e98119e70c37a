// TrainingSession: the network, strategy and trainer of one replica of a job — or, with model
// parallelism, of one partition of a replica — built from its job file and data, the same for
// `dtrain run` and a daemon's worker process. For a job of several processes it also joins the
// job's data plane from the Placement the rendezvous gave it: its replica's partitions (a ring
// over which activations and gradients pass: dist::PartitionedMlp), and its data-parallel group
// (config/job_layout.h: the ring, or the parameter-server shards, of its partition, as a job of
// cluster.workers whole replicas would join them), and it picks the strategy of cluster.mode.
// An elastic job's replica joins the ring of its membership (Placement::members), at its position
// there, which is also its share of each global batch (elastic_replica.h).
//
//   auto session = TrainingSession::Make(job, data, placement);  // sets the BLAS thread count too
//   session.value()->trainer().InitParams();   // or RestoreCheckpoint(c, session->trainer())
//   Status s = session.value()->Start();       // PS modes: take the shards' parameters
//   ... TrainRecorded(..., {.capture = session->Capturer()}) ...;  session->Finish();
//
// The session refers to `data` and the placement's listener, which must outlive it. One thread
// at a time.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "config/job.h"
#include "core/compress/compression_plan.h"
#include "core/dist/gradient_buckets.h"
#include "core/dist/partition_exchange.h"
#include "core/dist/peer_links.h"
#include "core/dist/ring_allreduce.h"
#include "core/dist/two_level_ring.h"
#include "core/model/network.h"
#include "core/train/strategy.h"
#include "core/train/trainer.h"
#include "daemon/runner/job_data.h"
#include "daemon/store/checkpoint.h"

namespace dtrain::dist {
class LocalSgdStrategy;
class PsStrategy;
}  // namespace dtrain::dist

namespace dtrain::runner {

// Where one process sits in its job (ranks: config/job_layout.h).
struct Placement;

// Whether `job`'s replicas train elastically (daemon/runner/elastic_replica.h): Elastic() set
// where it applies (config::ClusterConfig::ElasticApplies: sync replicas on the ring or on
// parameter servers, or local ones).
bool RunsElastic(const config::JobConfig& job);

// Sets this process's BLAS thread count for a replica of `job` placed as `placement`
// (train.threads, or the host's cores shared among the job's replicas there) and reserves
// OpenBLAS's buffers (math::ReserveBlasBuffers); returns the count. First it checks that [train]
// memory_limit leaves room for those buffers and the model (CheckMemoryLimit): OpenBLAS would retry
// forever for a buffer it cannot have. Make calls it; a job's process calls it first, before it
// reads data. Make then gives those threads to slices of the batch where the model allows
// (config::ChooseThreadLayout), leaving BLAS one thread.
Result<int> PrepareBlas(const config::JobConfig& job, const Placement& placement);

struct Placement {
  int rank = 0;
  std::vector<dist::Endpoint> peers;             // by rank; empty for a one-process job
  const dist::PeerListener* listener = nullptr;  // this process's data-plane socket, requiring
                                                 // data_token of the connections it accepts
  std::string data_token;                        // this process's introduction to its peers
  // Model parallelism: every process's listener for its replica's partition ring, by rank, and
  // this process's own.
  std::vector<dist::Endpoint> partition_peers;
  const dist::PeerListener* partition_listener = nullptr;
  // An elastic job's membership (RunsElastic): the ranks that train together now, ascending, `rank`
  // among them. Its position there is the replica's ring rank and data shard. Empty: every replica
  // of the job.
  std::vector<int> members;
  // Its epoch (0 for the attempt's first), which an elastic parameter-server job's hello names.
  std::int64_t membership = 0;
};

// Where a replica sits in its data-parallel ring: its position and the ring's size (the
// membership's, else cluster.workers and its rank).
struct RingSeat {
  int position = 0;
  int world = 1;
};
RingSeat SeatOf(const config::JobConfig& job, const Placement& placement);

// This process's view of its data-parallel group: the job and placement a job of
// cluster.workers whole replicas and cluster.Servers() shards would have given it (no model
// parallelism, its rank in the group, the group's addresses). Without model parallelism, the job's
// own.
struct GroupView {
  config::JobConfig job;
  Placement placement;
};
GroupView DataParallelView(const config::JobConfig& job, const Placement& placement);

// What carries the job's links ([cluster] transport): shared memory between processes of one
// host unless the job says tcp.
dist::LinkTransport LinkTransportOf(const config::JobConfig& job);

class TrainingSession {
 public:
  // Connects to the job's other processes as cluster.mode needs (each wait bounded by
  // cluster.timeout_seconds).
  static Result<std::unique_ptr<TrainingSession>> Make(const config::JobConfig& job,
                                                       const JobData& data,
                                                       const Placement& placement = {});
  ~TrainingSession();
  TrainingSession(const TrainingSession&) = delete;
  TrainingSession& operator=(const TrainingSession&) = delete;

  const model::Network& network() const { return *network_; }
  train::Trainer& trainer() { return *trainer_; }

  // After InitParams or a restore, before training: in the parameter-server modes the replica
  // takes its starting parameters from the shards (which loaded the same initialisation or
  // checkpoint), so every replica starts from the shards' values.
  Status Start();
  // How this replica captures a checkpoint in the parameter-server modes: the shards'
  // consistent snapshot with this replica's data position and running statistics (batchnorm's,
  // which the shards do not keep). Empty otherwise: the trainer's own
  // state is the checkpoint (RunOptions::capture unset).
  std::function<Result<store::CheckpointData>(train::Trainer&)> Capturer();
  // Says goodbye to the shards (a no-op in the other modes). Idempotent.
  Status Finish();
  // What carries this replica's messages, for its log: "data plane: ring over shared memory",
  // "data plane: 2 shard links over tcp", "data plane: 2 hosts x 2 workers: within the host over
  // shared memory, across hosts over tcp"; empty for a replica alone.
  std::string DescribeLinks() const;
  // The data-parallel ring's links (empty where the replica trains on no ring of peers), for a
  // transfer between steps: an elastic regroup's state broadcast. Valid while the session lives.
  const dist::RingLinks& ring_links() const { return ring_links_; }
  // Closes the ring's links (on parameter servers, the shards' links) now, between steps: the
  // next exchange fails here and on every peer (an elastic replica told to regroup leaves its
  // ring this way; the shard answers the others' next requests with a regroup reply). In mode
  // "local", whose steps touch the ring only at averages, the next step fails here too.
  void LeaveRing();
  // What the replica's matrix products run on (math::DescribeGemm), then what each conv2d layer
  // shape runs on, chosen by timing at Make (model::ChooseLayerPaths): lines for its log (none
  // for a partition of a model-parallel replica).
  const std::vector<std::string>& LayerPathLines() const { return layer_paths_; }

 private:
  TrainingSession() = default;
  // Joins the replica's partition ring and makes network_ the partition's.
  Status ConnectPartitions(const config::JobConfig& job, const model::ModelSpec& spec,
                           const Placement& placement, int capacity);
  // Joins the data-parallel group (`job` and `placement`: its view) and makes strategy_: over
  // the ring (ConnectRing) or the parameter-server shards (ConnectShards) as the mode exchanges.
  Status Connect(const config::JobConfig& job, const Placement& placement);
  Status ConnectRing(const config::JobConfig& job, const Placement& placement);
  // Sync replicas, several on each of several hosts: joins two_level_ring_, which then averages
  // the gradients (or, compressed, PowerSGD's factors and the warm-up's means), its ring options
  // set for `buckets` buckets. Leaves it null where the job stays on the flat ring: hierarchy =
  // "flat", or a placement dist::HostGroups plans nothing for. Collective, on ring_.
  Status ConnectTwoLevel(const config::JobConfig& job, const Placement& placement,
                         std::size_t buckets);
  Status ConnectShards(const config::JobConfig& job, const Placement& placement);

  dist::RingLinks partition_links_;
  std::unique_ptr<dist::PartitionExchange> exchange_;
  std::unique_ptr<model::Network> network_;
  std::vector<std::string> layer_paths_;
  dist::RingLinks ring_links_;
  std::unique_ptr<dist::RingAllReduce> ring_;
  std::unique_ptr<dist::TwoLevelRing>
      two_level_ring_;  // hierarchy: the rings strategy_ averages over
  std::vector<std::unique_ptr<dist::Link>> shard_links_;
  std::vector<dist::Link*> shards_;
  std::unique_ptr<train::Strategy> strategy_;
  dist::PsStrategy* ps_ = nullptr;   // strategy_, when the replica trains on parameter servers
  dist::LocalSgdStrategy* local_ = nullptr;  // strategy_, in mode "local" without compression
  bool shared_gradients_ = false;    // strategy_ shares gradients in this host's memory
  // What the data-plane line adds after its links, each after ", ": DescribeOverlap of an
  // overlapped sync exchange, where two-level jobs gather compressed values; else empty.
  std::string exchange_notes_;
  std::unique_ptr<train::Trainer> trainer_;
};

// A worker's links to each parameter-server shard of its data-parallel group (`job` and
// `placement`: its view), by shard, within cluster.timeout_seconds.
Result<std::vector<std::unique_ptr<dist::Link>>> ConnectShardLinks(const config::JobConfig& job,
                                                                   const Placement& placement);

// The buckets an overlapped sync exchange cuts the gradient of `spec` into ([cluster]
// bucket_bytes; dist::PlanBuckets); empty where the job does not overlap.
std::vector<dist::GradientBucket> BucketsOf(const config::JobConfig& job,
                                            const model::ModelSpec& spec);

// "gradients averaged in 3 buckets during the backward pass" (compressed: "compressed and
// exchanged in ..."): how `job`'s overlapped sync exchange of `buckets` buckets runs.
std::string DescribeOverlap(const config::JobConfig& job, std::size_t buckets);

// The strategy of a replica of a job with cluster.compression over `ring`, its means by `mean`
// (the ring, or two levels over the same replicas; both outlive it): its plan for `spec`'s
// tensors, the job's seed, optimizer and clip_norm; compressed bucket by bucket during the
// backward pass (dist::OverlappedSyncStrategy) where BucketsOf gives several buckets, else after
// it (dist::CompressedSyncStrategy).
std::unique_ptr<train::Strategy> MakeCompressedSync(const config::JobConfig& job,
                                                    const model::ModelSpec& spec,
                                                    dist::RingAllReduce& ring,
                                                    dist::MeanCollective& mean);

// The same on the ring alone for any mode that compresses over a ring: mode "local"'s averages
// (CompressedLocalStrategy), else MakeCompressedSync's.
std::unique_ptr<train::Strategy> MakeCompressedRing(const config::JobConfig& job,
                                                    const model::ModelSpec& spec,
                                                    dist::RingAllReduce& ring);

// How what a replica of `job` sends travels under its compression: a plan per tensor of `spec`,
// or on parameter servers per shard's slice of a push (dist::PlanPushes).
std::vector<compress::TensorPlan> CompressionPlanOf(const config::JobConfig& job,
                                                    const model::ModelSpec& spec);

// What a job's lead replica logs of its gradient compression as it starts: a line per entry of
// CompressionPlanOf, its plan (compress::DescribeTensorPlan) after "compression <method>: "; none
// without.
std::vector<std::string> CompressionLines(const config::JobConfig& job,
                                          const model::ModelSpec& spec);

// cluster.timeout_seconds: every wait of a job's process for a peer.
std::chrono::milliseconds JobTimeout(const config::JobConfig& job);

// The engine's options for replica `rank` (its replica index) of `job` with the resolved model
// `spec`: rank, world, sharding (sync modes and elastic jobs: a global batch of cluster.workers x
// batch_size rows), scaled rate and the evaluation's rows at once.
train::TrainOptions ReplicaOptions(const config::JobConfig& job, const model::ModelSpec& spec,
                                   int rank);

}  // namespace dtrain::runner
