#include "daemon/runner/training_session.h"

#include <algorithm>
#include <chrono>

#include "config/job_layout.h"
#include "config/mode_traits.h"
#include "config/thread_layout.h"
#include "core/compress/compression_plan.h"
#include "core/dist/compressed_local_strategy.h"
#include "core/dist/compressed_sync_strategy.h"
#include "core/dist/downpour_strategy.h"
#include "core/dist/host_sync_strategy.h"
#include "core/dist/local_sgd_strategy.h"
#include "core/dist/overlapped_sync_strategy.h"
#include "core/dist/partitioned_mlp.h"
#include "core/dist/push_codec.h"
#include "core/dist/sync_ps_strategy.h"
#include "core/math/gemm.h"
#include "core/model/onednn_paths.h"
#include "core/net/host_info.h"
#include "core/optim/optimizer.h"
#include "daemon/runner/memory_limit.h"
#include "daemon/runner/trainer_checkpoint.h"

namespace dtrain::runner {
namespace {

using config::Exchange;
using config::TraitsOf;

bool UsesShards(const config::JobConfig& job) { return job.cluster.Servers() > 0; }

// The job's training processes (every replica's partitions) whose data-plane address is this
// process's host (1 with no peer table).
int ReplicasOnThisHost(const config::JobConfig& job, const Placement& placement) {
  const auto& peers = placement.peers;
  const auto rank = static_cast<std::size_t>(placement.rank);
  if (rank >= peers.size()) return 1;
  const auto replicas = std::min(peers.size(), static_cast<std::size_t>(job.cluster.Trainers()));
  return static_cast<int>(
      std::count_if(peers.begin(), peers.begin() + replicas,
                    [&](const dist::Endpoint& e) { return e.host == peers[rank].host; }));
}

// The options of a replica's rings (the job's, or the two levels'): the job's timeout, and for an
// exchange that runs beside the pass (more than one bucket) waits that sleep at once, since
// polling took the pass's core (bench/README.md, overlap).
dist::RingOptions RingOptionsOf(const config::JobConfig& job, std::size_t buckets) {
  dist::RingOptions options{.timeout = JobTimeout(job)};
  if (buckets > 1) options.yield = std::chrono::microseconds(0);
  return options;
}

}  // namespace

bool RunsElastic(const config::JobConfig& job) {
  return job.cluster.Elastic() && job.cluster.ElasticApplies();
}

Result<int> PrepareBlas(const config::JobConfig& job, const Placement& placement) {
  const int threads =
      config::ThreadsPerReplica(job, ReplicasOnThisHost(job, placement), net::OnlineCores());
  if (Status fits = CheckMemoryLimit(job, threads); !fits.ok()) return fits;
  math::SetBlasThreads(threads);
  math::ReserveBlasBuffers();
  return threads;
}

train::TrainOptions ReplicaOptions(const config::JobConfig& job, const model::ModelSpec& spec,
                                   int rank) {
  train::TrainOptions o = config::TrainOptionsOf(job);
  o.eval_batch_size = train::Trainer::EvalBatchRows(spec, o.batch_size, o.eval_batch_size);
  o.augment = job.data.augment;
  o.rank = rank;
  o.world_size = job.cluster.workers;
  o.backup_workers = job.cluster.backup_workers;
  // Sync modes split one global batch per step, and so does an elastic job whatever its mode: the
  // members of an elastic local job take parts of each step's global batch, so every row is
  // trained once per epoch whatever the membership. The others train each worker on its own
  // shard.
  o.sharding = TraitsOf(job.cluster.mode).exchange == Exchange::kSynchronous || RunsElastic(job)
                   ? data::ShardMode::kGlobalBatches
                   : data::ShardMode::kContiguousShards;
  if (o.sharding == data::ShardMode::kGlobalBatches) {
    o.global_batch =
        static_cast<std::size_t>(o.batch_size) * static_cast<std::size_t>(o.world_size);
  }
  o.schedule.lr = config::ScaledLearningRate(job);
  o.learning_rate = job.optimizer.type != optim::OptimizerType::kFtrl;
  return o;
}

RingSeat SeatOf(const config::JobConfig& job, const Placement& placement) {
  if (placement.members.empty()) return {placement.rank, job.cluster.workers};
  const auto at = std::find(placement.members.begin(), placement.members.end(), placement.rank);
  return {static_cast<int>(at - placement.members.begin()),
          static_cast<int>(placement.members.size())};
}

GroupView DataParallelView(const config::JobConfig& job, const Placement& placement) {
  const config::ProcessRole role = config::RoleOf(job.cluster, placement.rank);
  GroupView view{job, {}};
  view.job.cluster.model_parallel = 1;
  view.placement.rank = role.group_rank;
  view.placement.listener = placement.listener;
  view.placement.data_token = placement.data_token;
  view.placement.members = placement.members;
  view.placement.membership = placement.membership;
  if (!placement.peers.empty()) {
    for (int r : config::DataParallelGroup(job.cluster, role.partition)) {
      view.placement.peers.push_back(placement.peers[static_cast<std::size_t>(r)]);
    }
  }
  return view;
}

TrainingSession::~TrainingSession() {
  trainer_.reset();
  strategy_.reset();  // without Finish: sync ps says goodbye, async leaves as a failed replica
}

Result<std::unique_ptr<TrainingSession>> TrainingSession::Make(const config::JobConfig& job,
                                                               const JobData& data,
                                                               const Placement& placement) {
  if (Result<int> blas = PrepareBlas(job, placement); !blas.ok()) return blas.status();
  std::unique_ptr<TrainingSession> s(new TrainingSession());
  train::TrainOptions options =
      ReplicaOptions(job, data.spec, config::RoleOf(job.cluster, placement.rank).replica);
  if (!placement.members.empty()) {
    const RingSeat seat = SeatOf(job, placement);
    options.rank = seat.position;
    options.world_size = seat.world;
  }
  if (job.cluster.Elastic()) {
    // A membership goes on without min(backup_workers, members - 1) of them: a lone one trains.
    options.backup_workers = std::min(options.backup_workers, options.world_size - 1);
    // The largest share a step can give a member, whatever memberships the job goes through.
    options.fewest_members = job.cluster.FewestMembers();
    options.most_members = job.cluster.MostMembers();
  }
  const int capacity = train::Trainer::Capacity(options);
  if (job.cluster.model_parallel > 1) {
    if (Status joined = s->ConnectPartitions(job, data.spec, placement, capacity); !joined.ok()) {
      return joined;
    }
  } else {
    // The cores PrepareBlas gave BLAS go to slices of the batch where that is faster.
    const config::ThreadLayout layout = config::ChooseThreadLayout(
        job, model::Model(data.spec), ReplicasOnThisHost(job, placement), net::OnlineCores());
    math::SetBlasThreads(layout.BlasThreads());
    auto network = std::make_unique<model::LocalNetwork>(data.spec, capacity,
                                                         layout.split ? layout.threads : 1);
    s->layer_paths_ =
        model::ChooseLayerPaths(network->model(), layout.PassRows(options.batch_size));
    s->layer_paths_.insert(s->layer_paths_.begin(), math::DescribeGemm());
    s->network_ = std::move(network);
  }
  const GroupView group = DataParallelView(job, placement);
  if (Status connected = s->Connect(group.job, group.placement); !connected.ok()) {
    return connected;
  }
  s->trainer_ = std::make_unique<train::Trainer>(*s->network_, options, data.train,
                                                 data.eval.rows > 0 ? &data.eval : nullptr,
                                                 data.scaling, *s->strategy_);
  return s;
}

Status TrainingSession::ConnectPartitions(const config::JobConfig& job,
                                          const model::ModelSpec& spec, const Placement& placement,
                                          int capacity) {
  const config::ClusterConfig& cluster = job.cluster;
  const config::ProcessRole role = config::RoleOf(cluster, placement.rank);
  Result<model::PartitionPlan> plan =
      model::PlanPartitions(spec, cluster.partition, cluster.model_parallel);
  if (!plan.ok()) return plan.status();
  if (placement.partition_listener == nullptr ||
      placement.partition_peers.size() != static_cast<std::size_t>(cluster.Processes())) {
    return Status::Error("a replica of " + std::to_string(cluster.model_parallel) +
                         " partitions needs the address of each (rendezvous)");
  }
  std::vector<dist::Endpoint> ring;
  for (int r : config::ReplicaPartitions(cluster, role.replica)) {
    ring.push_back(placement.partition_peers[static_cast<std::size_t>(r)]);
  }
  Result<dist::RingLinks> links = dist::JoinRing(
      role.partition, ring, *placement.partition_listener, dist::Clock::now() + JobTimeout(job),
      placement.data_token, LinkTransportOf(job));
  if (!links.ok()) return Status::Error("partition ring: " + links.status().message());
  partition_links_ = std::move(links).value();
  for (const auto& link : partition_links_.owned) link->SetSendChecksums(cluster.checksum);
  exchange_ = std::make_unique<dist::PartitionExchange>(
      role.partition, cluster.model_parallel, partition_links_.left, partition_links_.right,
      dist::PartitionExchangeOptions{.timeout = JobTimeout(job)});
  network_ = std::make_unique<dist::PartitionedMlp>(spec, std::move(plan).value(), *exchange_,
                                                    cluster.micro_batches, capacity);
  return Status::Ok();
}

dist::LinkTransport LinkTransportOf(const config::JobConfig& job) {
  return job.cluster.transport == config::Transport::kTcp ? dist::LinkTransport::kTcp
                                                          : dist::LinkTransport::kAuto;
}

Result<std::vector<std::unique_ptr<dist::Link>>> ConnectShardLinks(const config::JobConfig& job,
                                                                   const Placement& placement) {
  // The shards' ranks follow every replica's: an elastic job's up to max_workers.
  const int workers = job.cluster.MostMembers();
  if (placement.peers.size() != static_cast<std::size_t>(workers + job.cluster.Servers())) {
    return Status::Error("a job of " + std::to_string(workers) + " workers and " +
                         std::to_string(job.cluster.Servers()) +
                         " shards needs the address of every process (rendezvous)");
  }
  const dist::Deadline deadline = dist::Clock::now() + JobTimeout(job);
  std::vector<std::unique_ptr<dist::Link>> links;
  for (int s = 0; s < job.cluster.Servers(); ++s) {
    const int id = workers + s;
    Result<std::unique_ptr<dist::Link>> link = dist::ConnectLink(
        placement.peers[static_cast<std::size_t>(id)], placement.rank, id,
        "shard " + std::to_string(s), deadline, placement.data_token, LinkTransportOf(job));
    if (!link.ok()) return link.status();
    link.value()->SetSendChecksums(job.cluster.checksum);
    links.push_back(std::move(link).value());
  }
  return links;
}

Status TrainingSession::Connect(const config::JobConfig& job, const Placement& placement) {
  const int workers = job.cluster.workers;
  if (TraitsOf(job.cluster.mode).exchange == Exchange::kNone ||
      (job.cluster.MostMembers() == 1 && !UsesShards(job))) {
    if (job.cluster.compression.method != compress::Method::kNone) {
      // One replica compresses as each of several would, on a ring of itself: what a replica
      // computes does not depend on how many there are.
      ring_ = std::make_unique<dist::RingAllReduce>(0, 1, nullptr, nullptr);
      strategy_ = MakeCompressedRing(job, network_->spec(), *ring_);
      return Status::Ok();
    }
    strategy_ = std::make_unique<train::LocalStrategy>(
        optim::MakeOptimizer(job.optimizer, 0, network_->NumParams()), job.clip_norm);
    return Status::Ok();
  }
  // Every rank's address: an elastic job's up to max_workers.
  if (placement.listener == nullptr ||
      placement.peers.size() !=
          static_cast<std::size_t>(job.cluster.MostMembers() + job.cluster.Servers())) {
    return Status::Error("a job of " + std::to_string(workers) + " workers and " +
                         std::to_string(job.cluster.Servers()) +
                         " shards needs the address of every process (rendezvous)");
  }
  if (!UsesShards(job)) return ConnectRing(job, placement);
  return ConnectShards(job, placement);
}

Status TrainingSession::ConnectRing(const config::JobConfig& job, const Placement& placement) {
  const dist::Deadline deadline = dist::Clock::now() + JobTimeout(job);
  const RingSeat seat = SeatOf(job, placement);
  std::vector<dist::Endpoint> ring;
  if (placement.members.empty()) {
    ring.assign(placement.peers.begin(), placement.peers.begin() + job.cluster.workers);
  } else {
    for (int r : placement.members) ring.push_back(placement.peers[static_cast<std::size_t>(r)]);
  }
  Result<dist::RingLinks> links = dist::JoinRing(seat.position, ring, *placement.listener, deadline,
                                                 placement.data_token, LinkTransportOf(job));
  if (!links.ok()) return links.status();
  ring_links_ = std::move(links).value();
  for (const auto& link : ring_links_.owned) link->SetSendChecksums(job.cluster.checksum);
  std::vector<dist::GradientBucket> buckets = BucketsOf(job, network_->spec());
  const std::size_t bucket_count = buckets.size();
  ring_ =
      std::make_unique<dist::RingAllReduce>(seat.position, seat.world, ring_links_.left,
                                            ring_links_.right, RingOptionsOf(job, bucket_count));
  auto optimizer = optim::MakeOptimizer(job.optimizer, 0, network_->NumParams());
  switch (TraitsOf(job.cluster.mode).exchange) {
    case Exchange::kSynchronous: {
      // An elastic job's replicas each keep their own state, whole after every step (a regroup
      // takes one of them): no parameters shared on the host, no two-level exchange.
      const bool elastic = job.cluster.Elastic();
      if (!elastic) {
        if (Status two_level = ConnectTwoLevel(job, placement, bucket_count); !two_level.ok()) {
          return two_level;
        }
      }
      dist::MeanCollective& mean = two_level_ring_ != nullptr
                                       ? two_level_ring_->mean()
                                       : static_cast<dist::MeanCollective&>(*ring_);
      if (job.cluster.compression.method != compress::Method::kNone) {
        strategy_ = MakeCompressedSync(job, network_->spec(), *ring_, mean);
      } else if (two_level_ring_ != nullptr) {
        strategy_ = dist::MakeMeanSyncStrategy(mean, std::move(buckets), std::move(optimizer),
                                               job.clip_norm);
      } else {
        Result<std::unique_ptr<train::Strategy>> sync = dist::MakeSyncStrategy(
            *ring_, ring_links_, std::move(optimizer), job.clip_norm, JobTimeout(job),
            std::move(buckets),
            elastic ? dist::HostSharing::kNever : dist::HostSharing::kWhereAllLocal);
        if (!sync.ok()) return sync.status();
        strategy_ = std::move(sync).value();
        // A strategy with gradient storage of its own shares it with this host's replicas.
        shared_gradients_ =
            !strategy_->GradientStorage(network_->NumParams() + strategy_->GradientTail()).empty();
      }
      if (strategy_->DuringPass() != nullptr) {
        exchange_notes_ += ", " + DescribeOverlap(job, bucket_count);
      }
      if (two_level_ring_ != nullptr &&
          compress::ExchangesByGather(job.cluster.compression.method)) {
        exchange_notes_ += ", each host's sum compressed once and gathered across hosts";
      }
      return Status::Ok();
    }
    case Exchange::kPeriodicAverage:
      if (job.cluster.compression.method != compress::Method::kNone) {
        strategy_ = MakeCompressedRing(job, network_->spec(), *ring_);
        return Status::Ok();
      }
      strategy_ = std::make_unique<dist::LocalSgdStrategy>(*ring_, std::move(optimizer),
                                                           job.clip_norm, job.cluster.average_every,
                                                           job.cluster.average_optimizer);
      local_ = static_cast<dist::LocalSgdStrategy*>(strategy_.get());
      return Status::Ok();
    default:
      return Status::Error("cluster.mode \"" +
                           std::string(config::ClusterModeName(job.cluster.mode)) +
                           "\" trains no replicas over a ring");
  }
}

Status TrainingSession::ConnectTwoLevel(const config::JobConfig& job, const Placement& placement,
                                        std::size_t buckets) {
  if (job.cluster.hierarchy != config::Hierarchy::kAuto) return Status::Ok();
  Result<std::optional<dist::HostGroups>> groups = dist::AgreeHostGroups(*ring_);
  if (!groups.ok()) return groups.status();
  if (!groups.value()) return Status::Ok();
  const auto workers = static_cast<std::ptrdiff_t>(job.cluster.workers);
  Result<std::unique_ptr<dist::TwoLevelRing>> rings = dist::MakeTwoLevelRing(
      *groups.value(), {.rank = placement.rank,
                        .endpoints = std::vector<dist::Endpoint>(placement.peers.begin(),
                                                                 placement.peers.begin() + workers),
                        .listener = placement.listener,
                        .deadline = dist::Clock::now() + JobTimeout(job),
                        .token = placement.data_token,
                        .transport = LinkTransportOf(job),
                        .checksum = job.cluster.checksum,
                        .ring_options = RingOptionsOf(job, buckets)});
  if (!rings.ok()) return rings.status();
  two_level_ring_ = std::move(rings).value();
  return Status::Ok();
}

Status TrainingSession::ConnectShards(const config::JobConfig& job, const Placement& placement) {
  Result<std::vector<std::unique_ptr<dist::Link>>> links = ConnectShardLinks(job, placement);
  if (!links.ok()) return links.status();
  shard_links_ = std::move(links).value();
  shards_ = dist::LinkPointers(shard_links_);
  const std::size_t n = network_->NumParams();
  const int workers = job.cluster.workers;
  const int rank = placement.rank;
  // An elastic job's replica says hello as its membership's member, at its position there.
  const bool elastic = job.cluster.Elastic();
  const RingSeat seat = SeatOf(job, placement);
  std::unique_ptr<dist::PsStrategy> ps;
  switch (TraitsOf(job.cluster.mode).exchange) {
    case Exchange::kSynchronous:
      ps = std::make_unique<dist::SyncPsStrategy>(
          shards_, n,
          dist::SyncPsOptions{
              .rank = elastic ? seat.position : rank,
              .workers = workers,
              .clip_norm = job.clip_norm,
              .timeout = JobTimeout(job),
              .compression = job.cluster.compression,
              .optimizer_state_vectors =
                  static_cast<std::size_t>(optim::StateVectorCount(job.optimizer.type)),
              .backup_workers = elastic ? std::min(job.cluster.backup_workers, seat.world - 1)
                                        : job.cluster.backup_workers,
              .membership = static_cast<std::uint32_t>(placement.membership),
              .members = elastic ? seat.world : 0});
      break;
    case Exchange::kAsynchronous:
      ps = std::make_unique<dist::DownpourStrategy>(
          shards_, n,
          dist::DownpourOptions{.rank = rank,
                                .workers = workers,
                                .push_every = job.cluster.push_every,
                                .fetch_every = job.cluster.fetch_every,
                                .max_staleness = job.cluster.max_staleness,
                                .clip_norm = job.clip_norm,
                                .timeout = JobTimeout(job),
                                .compression = job.cluster.compression});
      break;
    default:
      return Status::Error("cluster.mode \"" +
                           std::string(config::ClusterModeName(job.cluster.mode)) +
                           "\" trains no replicas on parameter servers");
  }
  ps_ = ps.get();
  strategy_ = std::move(ps);
  return Status::Ok();
}

std::string TrainingSession::DescribeLinks() const {
  if (shared_gradients_) {
    // The trainer keeps its parameters in the segment unless the model has running statistics.
    const bool params = network_->StatisticRanges().empty();
    return std::string("data plane: gradients ") + (params ? "and parameters " : "") +
           "shared in memory by the " + std::to_string(ring_->world()) + " workers of this host";
  }
  if (two_level_ring_ != nullptr) {
    return "data plane: " + two_level_ring_->Describe() + exchange_notes_;
  }
  if (ring_links_.left != nullptr) {
    const std::string_view left = ring_links_.left->Transport();
    const std::string_view right = ring_links_.right->Transport();
    if (left == right) return "data plane: ring over " + std::string(left) + exchange_notes_;
    return "data plane: ring over " + std::string(left) + " from the left, " + std::string(right) +
           " to the right" + exchange_notes_;
  }
  if (shard_links_.empty()) return "";
  return "data plane: " + std::to_string(shard_links_.size()) + " shard link" +
         (shard_links_.size() == 1 ? "" : "s") + " over " +
         std::string(shard_links_.front()->Transport());
}

Status TrainingSession::Start() {
  return ps_ != nullptr ? ps_->Connect(trainer_->params(), trainer_->position().step)
                        : Status::Ok();
}

std::function<Result<store::CheckpointData>(train::Trainer&)> TrainingSession::Capturer() {
  if (ps_ == nullptr) return {};
  return [this](train::Trainer& trainer) -> Result<store::CheckpointData> {
    store::CheckpointData c = store::HeaderOf(ViewCheckpoint(trainer));
    Result<dist::PsSnapshot> snapshot = ps_->Snapshot();
    if (!snapshot.ok()) return snapshot.status();
    const dist::PsSnapshot& shards = snapshot.value();
    c.params.assign(shards.params.begin(), shards.params.end());
    // The shards hold the running statistics' initial values: the checkpoint takes this
    // replica's own, as in ring mode.
    for (const model::ParamRange& r : trainer.network().StatisticRanges()) {
      std::copy_n(trainer.params().data() + r.offset, r.count, c.params.data() + r.offset);
    }
    c.optimizer_state.clear();
    for (const std::vector<float>& v : shards.state)
      c.optimizer_state.emplace_back(v.begin(), v.end());
    // Every shard's optimizer takes the same steps in sync mode; in async each counts its own
    // pushes, and the checkpoint keeps the most advanced (only Adam's bias correction uses it).
    c.optimizer_steps = 0;
    for (std::uint64_t steps : shards.steps) {
      c.optimizer_steps = std::max(c.optimizer_steps, steps);
    }
    if (ps_->KeepsClocks()) c.clocks = shards.clocks;  // each shard's version vector
    return c;
  };
}

void TrainingSession::LeaveRing() {
  if (ring_ != nullptr) ring_->Leave();  // a lone member has no link to close
  for (const auto& link : ring_links_.owned) link->Close();
  for (const auto& link : shard_links_) link->Close();
  if (local_ != nullptr) local_->LeaveRing();
}

Status TrainingSession::Finish() { return ps_ != nullptr ? ps_->Finish() : Status::Ok(); }

std::unique_ptr<train::Strategy> MakeCompressedSync(const config::JobConfig& job,
                                                    const model::ModelSpec& spec,
                                                    dist::RingAllReduce& ring,
                                                    dist::MeanCollective& mean) {
  const compress::Settings& settings = job.cluster.compression;
  const model::Model model(spec);
  std::vector<compress::TensorPlan> plan = compress::PlanCompression(model.Tensors(), settings);
  auto optimizer = optim::MakeOptimizer(job.optimizer, 0, model.NumParams());
  std::vector<dist::GradientBucket> buckets = BucketsOf(job, spec);
  if (buckets.size() > 1) {
    return std::make_unique<dist::OverlappedSyncStrategy>(
        ring, mean, std::move(buckets),
        std::make_unique<compress::GradientCompressor>(std::move(plan), settings, job.train.seed),
        std::move(optimizer), job.clip_norm);
  }
  return std::make_unique<dist::CompressedSyncStrategy>(
      ring, mean, std::move(plan), settings, job.train.seed, std::move(optimizer), job.clip_norm);
}

std::string DescribeOverlap(const config::JobConfig& job, std::size_t buckets) {
  const bool compressed = job.cluster.compression.method != compress::Method::kNone;
  return std::string("gradients ") + (compressed ? "compressed and exchanged" : "averaged") +
         " in " + std::to_string(buckets) + " buckets during the backward pass";
}

std::vector<dist::GradientBucket> BucketsOf(const config::JobConfig& job,
                                            const model::ModelSpec& spec) {
  if (!job.cluster.OverlapApplies() || job.cluster.bucket_bytes == 0) return {};
  const model::Model model(spec);
  return dist::PlanBuckets(dist::LayerStarts(model), model.NumParams(),
                           job.cluster.bucket_bytes / sizeof(float));
}

std::unique_ptr<train::Strategy> MakeCompressedRing(const config::JobConfig& job,
                                                    const model::ModelSpec& spec,
                                                    dist::RingAllReduce& ring) {
  if (TraitsOf(job.cluster.mode).exchange != Exchange::kPeriodicAverage) {
    return MakeCompressedSync(job, spec, ring, ring);
  }
  const compress::Settings& settings = job.cluster.compression;
  const model::Model model(spec);
  return std::make_unique<dist::CompressedLocalStrategy>(
      ring, compress::PlanCompression(model.Tensors(), settings), settings, job.train.seed,
      optim::MakeOptimizer(job.optimizer, 0, model.NumParams()), job.clip_norm,
      dist::AveragingOptions{.average_every = job.cluster.average_every,
                             .average_optimizer = job.cluster.average_optimizer});
}

std::vector<compress::TensorPlan> CompressionPlanOf(const config::JobConfig& job,
                                                    const model::ModelSpec& spec) {
  const model::Model model(spec);
  if (!UsesShards(job)) return compress::PlanCompression(model.Tensors(), job.cluster.compression);
  // On parameter servers a push's slice for each shard is what travels, not a tensor.
  return dist::PlanPushes(dist::ShardRanges(model.NumParams(), job.cluster.Servers()),
                          job.cluster.compression);
}

std::vector<std::string> CompressionLines(const config::JobConfig& job,
                                          const model::ModelSpec& spec) {
  const compress::Settings& settings = job.cluster.compression;
  std::vector<std::string> lines;
  if (settings.method == compress::Method::kNone) return lines;
  const std::string head =
      "compression " + std::string(compress::MethodName(settings.method)) + ": ";
  for (const compress::TensorPlan& t : CompressionPlanOf(job, spec)) {
    lines.push_back(head + compress::DescribeTensorPlan(t));
  }
  return lines;
}

std::chrono::milliseconds JobTimeout(const config::JobConfig& job) {
  return std::chrono::milliseconds(static_cast<long>(job.cluster.timeout_seconds * 1000));
}

}  // namespace dtrain::runner
