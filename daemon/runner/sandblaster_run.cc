#include "daemon/runner/sandblaster_run.h"

#include <algorithm>
#include <map>
#include <memory>

#include "config/job_layout.h"
#include "core/dist/peer_links.h"
#include "core/dist/sandblaster_worker.h"
#include "core/dist/shard_ranges.h"
#include "core/dist/sharded_vectors.h"
#include "core/dist/vector_shard.h"
#include "core/dist/work_dispatch.h"
#include "core/model/model.h"
#include "core/train/batch_objective.h"
#include "daemon/runner/lbfgs_checkpoint.h"

namespace dtrain::runner {
namespace {

using config::ProcessRole;

int CoordinatorRank(const config::JobConfig& job) { return config::LeadRank(job.cluster); }
int ShardRank(const config::JobConfig& job, int shard) { return job.cluster.workers + shard; }

// Links to the processes of `ranks`, each connecting to this one's listener in any order.
Result<std::map<int, std::unique_ptr<dist::Link>>> AcceptFrom(const config::JobConfig& job,
                                                            const Placement& placement,
                                                            const std::vector<int>& ranks,
                                                            const std::string& who) {
  std::map<int, std::unique_ptr<dist::Link>> links;
  const dist::Deadline deadline = dist::Clock::now() + JobTimeout(job);
  while (links.size() < ranks.size()) {
    Result<dist::IntroducedPeer> in = placement.listener->Accept(deadline);
    if (!in.ok()) return Status::Error(who + ": waiting for its peers: " + in.status().message());
    const int rank = static_cast<int>(in.value().id);
    if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end() || links.count(rank) != 0) {
      return Status::Error(who + ": a connection introduced itself as " + std::to_string(rank) +
                           ", which is no peer still expected");
    }
    auto link = dist::MakeLink(std::move(in.value().stream), LinkTransportOf(job),
                               dist::ShmRole::kOpener, placement.rank, rank,
                               config::DescribeProcess(job.cluster, rank), deadline);
    if (!link.ok()) return link.status();
    link.value()->SetSendChecksums(job.cluster.checksum);
    links[rank] = std::move(link).value();
  }
  return links;
}

Result<std::unique_ptr<dist::Link>> ConnectTo(const config::JobConfig& job,
                                              const Placement& placement, int rank) {
  auto link = dist::ConnectLink(placement.peers[static_cast<std::size_t>(rank)], placement.rank,
                                rank, config::DescribeProcess(job.cluster, rank),
                                dist::Clock::now() + JobTimeout(job), placement.data_token,
                                LinkTransportOf(job));
  if (link.ok()) link.value()->SetSendChecksums(job.cluster.checksum);
  return link;
}

// Links to every shard, in shard order.
Result<std::vector<std::unique_ptr<dist::Link>>> ConnectShards(const config::JobConfig& job,
                                                               const Placement& placement) {
  std::vector<std::unique_ptr<dist::Link>> shards;
  for (int s = 0; s < job.cluster.servers; ++s) {
    auto link = ConnectTo(job, placement, ShardRank(job, s));
    if (!link.ok()) return link.status();
    shards.push_back(std::move(link).value());
  }
  return shards;
}

// The coordinator's engine: ShardedVectors over the shards, passes run by the WorkDispatcher.
class SandblasterEngine final : public LbfgsEngine {
 public:
  SandblasterEngine(const config::JobConfig& job, std::size_t num_params, std::size_t rows,
                    std::vector<dist::Link*> shards, std::vector<dist::Link*> workers)
      : workers_(job.cluster.workers),
        history_(job.lbfgs.history),
        staging_(optim::LbfgsVectorCount(job.lbfgs.history), num_params),
        rows_(rows),
        dispatcher_(std::move(workers), {.units = job.cluster.WorkUnits(),
                                         .backup_after = job.cluster.backup_after,
                                         .rows = rows,
                                         .timeout = JobTimeout(job)}),
        vectors_(std::move(shards), num_params,
                 {.rows = rows, .weight_decay = job.train.weight_decay, .timeout = JobTimeout(job)},
                 [this](std::uint64_t pass) { return RunPass(pass); }),
        units_(static_cast<std::size_t>(job.cluster.workers), 0) {}

  optim::LbfgsVectors& vectors() override { return vectors_; }
  optim::VectorSlices& Staging() override { return staging_; }
  Status Collect(bool history) override {
    for (int v : Saved(history)) {
      if (Status s = vectors_.Gather(v, staging_[v]); !s.ok()) return s;
    }
    return Status::Ok();
  }
  Status Publish(bool history) override {
    for (int v : Saved(history)) {
      if (Status s = vectors_.Load(v, staging_[v]); !s.ok()) return s;
    }
    return Status::Ok();
  }
  model::LossValue LastLoss() const override {
    return {vectors_.last_pass().loss_sum, static_cast<long>(vectors_.last_pass().correct)};
  }
  std::size_t rows() const override { return rows_; }
  std::vector<std::pair<std::string, double>> TakeIterationMetrics() override {
    std::vector<std::pair<std::string, double>> out;
    for (int w = 0; w < workers_; ++w) {
      out.emplace_back("units_worker_" + std::to_string(w), units_[static_cast<std::size_t>(w)]);
    }
    out.emplace_back("backups_issued", backups_issued_);
    out.emplace_back("backups_won", backups_won_);
    out.emplace_back("units_revoked", revoked_);
    out.emplace_back("passes", passes_);
    std::fill(units_.begin(), units_.end(), 0);
    backups_issued_ = backups_won_ = revoked_ = passes_ = 0;
    return out;
  }
  std::vector<std::string> TakeEvents() override {
    std::vector<std::string> events;
    for (const std::string& lost : dispatcher_.TakeLost()) {
      events.push_back(lost + "; its units go to the other workers");
    }
    return events;
  }

  Status Finish() {
    Status stopped = dispatcher_.Stop();
    Status bye = vectors_.Goodbye();
    return bye.ok() ? stopped : bye;
  }

 private:
  // x; with `history` also what a checkpoint keeps beside it.
  std::vector<int> Saved(bool history) const {
    std::vector<int> v{optim::kX};
    if (!history) return v;
    const std::vector<int> rest = SavedVectors(history_);
    v.insert(v.end(), rest.begin(), rest.end());
    return v;
  }

  Result<dist::PassTotals> RunPass(std::uint64_t pass) {
    Result<dist::PassTotals> totals = dispatcher_.RunPass(pass);
    if (!totals.ok()) return totals;
    const dist::PassTotals& t = totals.value();
    for (std::size_t w = 0; w < units_.size() && w < t.units_per_worker.size(); ++w) {
      units_[w] += t.units_per_worker[w];
    }
    backups_issued_ += t.backups_issued;
    backups_won_ += t.backups_won;
    revoked_ += t.revoked;
    ++passes_;
    return totals;
  }

  const int workers_;
  const int history_;
  optim::VectorSlices staging_;
  std::size_t rows_;
  dist::WorkDispatcher dispatcher_;
  dist::ShardedVectors vectors_;
  std::vector<int> units_;
  int backups_issued_ = 0, backups_won_ = 0, revoked_ = 0, passes_ = 0;
};

}  // namespace

Status RunSandblasterWorkerOfJob(const config::JobConfig& job, const JobData& data,
                                 const Placement& placement) {
  auto coordinator = ConnectTo(job, placement, CoordinatorRank(job));
  if (!coordinator.ok()) return coordinator.status();
  auto shards = ConnectShards(job, placement);
  if (!shards.ok()) return shards.status();
  const model::Model model(data.spec);
  train::BatchObjective objective(
      model, data.train, data.scaling,
      train::ObjectiveRows(data.train.rows, static_cast<std::size_t>(job.sample_rows),
                           job.train.seed),
      job.train.weight_decay, job.train.batch_size);
  const std::vector<dist::Link*> links = dist::LinkPointers(shards.value());
  return dist::RunSandblasterWorker(
      *coordinator.value(), links,
      {.rank = placement.rank, .num_params = model.NumParams(), .timeout = JobTimeout(job)},
      [&](std::span<const float> x, std::size_t first, std::size_t last, std::span<float> g) {
        return objective.AccumulateRows(x, first, last, g);
      });
}

Status ServeSandblasterShard(const config::JobConfig& job, const model::ModelSpec& spec,
                            const Placement& placement) {
  const int shard = placement.rank - job.cluster.workers;
  const model::Model model(spec);
  const std::size_t n = model.NumParams();
  const dist::ShardRange range = dist::ShardRanges(n, job.cluster.servers)[static_cast<std::size_t>(shard)];
  std::vector<std::pair<std::size_t, std::size_t>> weights;
  for (const model::ParamRange& w : model.WeightRanges()) {
    weights.emplace_back(w.offset, w.offset + w.count);
  }
  dist::VectorShard server({.shard = shard,
                            .shards = job.cluster.servers,
                            .begin = range.begin,
                            .end = range.end,
                            .vectors = optim::LbfgsVectorCount(job.lbfgs.history),
                            .weights = std::move(weights),
                            .timeout = JobTimeout(job)});
  std::vector<int> peers;
  for (int w = 0; w < job.cluster.workers; ++w) peers.push_back(w);
  peers.push_back(CoordinatorRank(job));
  auto links = AcceptFrom(job, placement, peers, server.name());
  if (!links.ok()) return links.status();
  std::vector<dist::Link*> workers;
  for (int w = 0; w < job.cluster.workers; ++w) workers.push_back(links.value().at(w).get());
  return server.Serve(*links.value().at(CoordinatorRank(job)), workers);
}

Result<LbfgsRunResult> RunSandblasterCoordinator(const config::JobConfig& job,
                                                 const JobData& data, const Placement& placement,
                                                 RunRecorder& recorder, const RunOptions& options,
                                                 const store::CheckpointData* resume) {
  auto shards = ConnectShards(job, placement);
  if (!shards.ok()) return shards.status();
  std::vector<int> ranks;
  for (int w = 0; w < job.cluster.workers; ++w) ranks.push_back(w);
  auto accepted = AcceptFrom(job, placement, ranks, "the coordinator");
  if (!accepted.ok()) return accepted.status();
  std::vector<dist::Link*> workers;
  for (int w = 0; w < job.cluster.workers; ++w) workers.push_back(accepted.value().at(w).get());
  const model::Model model(data.spec);
  const std::size_t rows =
      train::ObjectiveRows(data.train.rows, static_cast<std::size_t>(job.sample_rows),
                           job.train.seed)
          .size();
  SandblasterEngine engine(job, model.NumParams(), rows, dist::LinkPointers(shards.value()),
                           workers);
  Result<LbfgsRunResult> ran = RunLbfgs(job, data, model, engine, recorder, options, resume);
  Status finished = engine.Finish();
  if (options.observer != nullptr) {  // losses learnt of as the workers were stopped
    for (const std::string& event : engine.TakeEvents()) options.observer->OnEvent(event);
  }
  if (!ran.ok()) return ran;
  if (!finished.ok()) return finished;
  return ran;
}

}  // namespace dtrain::runner
