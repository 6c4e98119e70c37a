#include "core/dist/sync_ps_strategy.h"

#include <algorithm>

#include "core/optim/clip.h"

namespace dtrain::dist {

SyncPsStrategy::SyncPsStrategy(std::span<Link* const> shard_links, std::size_t num_params,
                               SyncPsOptions options)
    : client_(shard_links, {.rank = options.rank,
                            .workers = options.workers,
                            .num_params = num_params,
                            .mode = PsMode::kSync,
                            .max_staleness = 0,
                            .timeout = options.timeout,
                            .compression = options.compression,
                            .backup_workers = options.backup_workers,
                            .membership = options.membership,
                            .members = options.members}),
      options_(options) {}

SyncPsStrategy::~SyncPsStrategy() {
  if (!failed_) (void)Finish();  // the error has nobody to go to; the shard reports it
}

Status SyncPsStrategy::Connect(std::span<float> params, std::int64_t step) {
  Status s = client_.Hello(params, {}, static_cast<std::uint64_t>(step));
  if (!s.ok()) failed_ = true;
  return s;
}

Status SyncPsStrategy::Greet(std::uint64_t step) {
  if (client_.greeted()) return Status::Ok();
  Status s = client_.Hello({}, {}, step);
  if (!s.ok()) failed_ = true;
  return s;
}

Status SyncPsStrategy::Apply(std::int64_t step, std::span<float> params, std::span<float> grad,
                             float lr, const train::StepShare& share) {
  if (finished_) {
    return Status::Error("worker rank " + std::to_string(options_.rank) + ": step " +
                         std::to_string(step) + " after goodbye");
  }
  if (Status s = Greet(static_cast<std::uint64_t>(step)); !s.ok()) return s;
  if (options_.clip_norm > 0.0f) optim::ClipByGlobalNorm(grad, options_.clip_norm);
  Result<std::uint32_t> agreed =
      client_.SyncStep(static_cast<std::uint64_t>(step), grad, lr, share.rows, share.total_rows,
                       vote_, params, checkpoint_proposed_, share.take_all);
  if (!agreed.ok()) {
    failed_ = true;
    return agreed.status();
  }
  ++steps_;
  next_step_ = client_.clock_reached() + 1;
  checkpoint_proposed_ = false;
  checkpoint_agreed_ = client_.checkpoint_agreed();
  if (agreed.value() != kNoVote) agreed_ = train::FromStopVote(agreed.value());
  return Status::Ok();
}

bool SyncPsStrategy::ProposeStop(train::StopReason reason) {
  vote_ = std::max(vote_, train::StopVote(reason));
  return true;
}

Result<PsSnapshot> SyncPsStrategy::Snapshot() {
  if (Status s = Greet(next_step_); !s.ok()) return s;
  Result<PsSnapshot> snap = client_.Snapshot();
  if (!snap.ok()) failed_ = true;
  return snap;
}

Result<std::vector<std::vector<float>>> SyncPsStrategy::CheckpointState() {
  if (!Compressed()) return std::vector<std::vector<float>>{};
  if (Status s = Greet(next_step_); !s.ok()) return s;
  Result<std::vector<std::vector<float>>> residuals = client_.ExchangeResiduals(next_step_);
  if (!residuals.ok()) failed_ = true;
  return residuals;
}

Status SyncPsStrategy::RestoreState(std::span<const std::span<const float>> state) {
  const std::size_t before = options_.optimizer_state_vectors;
  const auto workers = static_cast<std::size_t>(options_.workers);
  // Without residuals (an uncompressed job's checkpoint, or one from before they were kept) they
  // start at zero.
  if (!Compressed() || state.size() == before) return Status::Ok();
  if (state.size() != before + workers) {
    return Status::Error("the checkpoint holds " + std::to_string(state.size()) +
                         " state vectors; the shards' optimizer keeps " + std::to_string(before) +
                         " and " + std::to_string(workers) +
                         " workers compressing their pushes add one residual each");
  }
  const std::span<float> residual = client_.compressor()->StateVectors().front();
  const std::span<const float> mine = state[before + static_cast<std::size_t>(options_.rank)];
  if (mine.size() != residual.size()) {
    return Status::Error("worker rank " + std::to_string(options_.rank) + "'s residual holds " +
                         std::to_string(mine.size()) + " floats, not " +
                         std::to_string(residual.size()));
  }
  std::ranges::copy(mine, residual.begin());
  return Status::Ok();
}

Status SyncPsStrategy::Finish() {
  if (finished_) return Status::Ok();
  finished_ = true;
  if (Status s = Greet(next_step_); !s.ok()) return s;
  Status s = client_.Goodbye(steps_);
  if (!s.ok()) failed_ = true;
  return s;
}

}  // namespace dtrain::dist
