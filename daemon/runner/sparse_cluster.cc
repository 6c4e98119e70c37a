#include "daemon/runner/sparse_cluster.h"

#include <sys/resource.h>

#include <atomic>

#include "config/job_layout.h"
#include "core/dist/sparse_ps_client.h"
#include "core/dist/sparse_shard.h"
#include "core/sparse/key_shards.h"
#include "daemon/runner/shard_service.h"
#include "daemon/runner/sparse_checkpoint.h"

namespace dtrain::runner {
namespace {

std::vector<train::MetricPoint> StatPoints(const dist::SparseShardStats& s) {
  const auto step = static_cast<std::int64_t>(s.global_clock);
  std::vector<train::MetricPoint> points{
      {step, 0.0, "pushes_applied", static_cast<double>(s.pushes_applied)},
      {step, 0.0, "shard_keys", static_cast<double>(s.keys)},
      {step, 0.0, "keys_pushed", static_cast<double>(s.keys_pushed)},
      {step, 0.0, "keys_pulled", static_cast<double>(s.keys_pulled)}};
  AppendStalenessPoints(step, s.staleness, points);
  return points;
}

// The model the shards hold: the job's, softmax's classes from the checkpoint or the data.
Result<sparse::SparseModelSpec> ShardModel(const config::JobConfig& job,
                                           const std::optional<store::CheckpointData>& resume) {
  if (resume) return sparse::ParseSparseModelSpec(resume->model_spec);
  if (job.sparse_model.type != sparse::SparseModelType::kSoftmax) return job.sparse_model;
  Result<SparseJobData> data = LoadSparseJobData(job);  // the classes are the data's
  if (!data.ok()) return data.status();
  return data.value().spec;
}

}  // namespace

Status ServeSparseShardOfJob(const config::JobConfig& job, const Placement& placement,
                             const std::optional<store::CheckpointData>& resume,
                             train::MetricSink& sink) {
  const int workers = job.cluster.workers;
  const int shards = job.cluster.Servers();
  const int shard = placement.rank - workers;
  if (placement.listener == nullptr || shard < 0 || shard >= shards) {
    return Status::Error("process " + std::to_string(placement.rank) +
                         " is not a parameter server of this job");
  }
  Result<sparse::SparseModelSpec> spec = ShardModel(job, resume);
  if (!spec.ok()) return spec.status();
  dist::SparseShard server(dist::SparseShardOptions{.shard = shard,
                                                    .shards = shards,
                                                    .workers = workers,
                                                    .mode = PsModeOf(job),
                                                    .max_staleness = job.cluster.max_staleness,
                                                    .model = spec.value(),
                                                    .optimizer = job.optimizer,
                                                    .seed = job.train.seed,
                                                    .timeout = JobTimeout(job)});
  if (resume) {
    const sparse::SparseModel model(spec.value());
    const sparse::KeyTable initial(model, job.optimizer, job.train.seed);
    Result<sparse::KeyTableState> whole =
        SparseStateOf(*resume, spec.value(), initial.StateVectors());
    if (!whole.ok()) return whole.status();
    Status loaded = server.Load(
        sparse::ShardPart(whole.value(), shard, shards, model.SlotWidth(), initial.Snapshot()));
    if (!loaded.ok()) return loaded;
  }
  Result<std::vector<std::unique_ptr<dist::Link>>> owned =
      AcceptWorkerLinks(job, placement, server.name());
  if (!owned.ok()) return owned.status();
  const std::vector<dist::Link*> links = dist::LinkPointers(owned.value());

  std::atomic<bool> ended{false};
  return ServeReporting(
      sink,
      [&] {
        std::vector<train::MetricPoint> points = StatPoints(server.Stats());
        if (ended) {  // the shard process's peak, for sizing jobs
          struct rusage usage {};
          ::getrusage(RUSAGE_SELF, &usage);
          points.push_back({points.front().step, 0.0, "peak_rss_bytes",
                            static_cast<double>(usage.ru_maxrss) * 1024.0});
        }
        return points;
      },
      [&] {
        const Status served = server.Serve(links);
        ended = true;
        return served;
      });
}

Result<SparseRunResult> RunSparseReplica(const config::JobConfig& job, const SparseJobData& data,
                                         const Placement& placement, RunRecorder& recorder,
                                         const RunOptions& options,
                                         const store::CheckpointData* resume) {
  Result<std::vector<std::unique_ptr<dist::Link>>> owned = ConnectShardLinks(job, placement);
  if (!owned.ok()) return owned.status();
  const std::vector<dist::Link*> links = dist::LinkPointers(owned.value());
  const sparse::SparseModel model(data.spec);
  dist::SparseShardClient client(links,
                                 {.rank = placement.rank,
                                  .workers = job.cluster.workers,
                                  .mode = PsModeOf(job),
                                  .max_staleness = job.cluster.max_staleness,
                                  .timeout = JobTimeout(job)},
                                 model);
  if (Status greeted = client.Hello(); !greeted.ok()) return greeted;
  const SparsePlace place{client, [&client] { return client.Snapshot(); }};
  Result<SparseRunResult> ran =
      RunSparseOn(job, data, place, config::RoleOf(job.cluster, placement.rank).replica, recorder,
                  options, resume);
  if (!ran.ok()) return ran;
  if (Status left = client.Goodbye(); !left.ok()) return left;
  return ran;
}

}  // namespace dtrain::runner
