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
                            .compression = options.compression}),
      options_(options) {}

SyncPsStrategy::~SyncPsStrategy() {
  if (!failed_) (void)Finish();  // the error has nobody to go to; the shard reports it
}

Status SyncPsStrategy::Connect(std::span<float> params) {
  Status s = client_.Hello(params);
  if (!s.ok()) failed_ = true;
  return s;
}

Status SyncPsStrategy::Apply(std::int64_t step, std::span<float> params, std::span<float> grad,
                             float lr, const train::StepShare& share) {
  if (finished_) {
    return Status::Error("worker rank " + std::to_string(options_.rank) + ": step " +
                         std::to_string(step) + " after goodbye");
  }
  if (!client_.greeted()) {
    if (Status s = client_.Hello({}); !s.ok()) {
      failed_ = true;
      return s;
    }
  }
  if (options_.clip_norm > 0.0f) optim::ClipByGlobalNorm(grad, options_.clip_norm);
  Result<std::uint32_t> agreed = client_.SyncStep(static_cast<std::uint64_t>(step), grad, lr,
                                                  share.rows, share.total_rows, vote_, params);
  if (!agreed.ok()) {
    failed_ = true;
    return agreed.status();
  }
  ++steps_;
  if (agreed.value() != kNoVote) {
    agreed_ = static_cast<train::StopReason>(std::min<std::uint32_t>(
        agreed.value() - 1, static_cast<std::uint32_t>(train::StopReason::kRequested)));
  }
  return Status::Ok();
}

bool SyncPsStrategy::ProposeStop(train::StopReason reason) {
  vote_ = std::max(vote_, static_cast<std::uint32_t>(reason) + 1);
  return true;
}

Result<PsSnapshot> SyncPsStrategy::Snapshot() {
  if (!client_.greeted()) {
    if (Status s = client_.Hello({}); !s.ok()) {
      failed_ = true;
      return s;
    }
  }
  Result<PsSnapshot> snap = client_.Snapshot();
  if (!snap.ok()) failed_ = true;
  return snap;
}

Status SyncPsStrategy::Finish() {
  if (finished_) return Status::Ok();
  finished_ = true;
  if (!client_.greeted()) {
    if (Status s = client_.Hello({}); !s.ok()) {
      failed_ = true;
      return s;
    }
  }
  Status s = client_.Goodbye(steps_);
  if (!s.ok()) failed_ = true;
  return s;
}

}  // namespace dtrain::dist
