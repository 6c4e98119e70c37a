#include "core/dist/overlapped_sync_strategy.h"

#include <cassert>
#include <chrono>
#include <string>
#include <utility>

#include "core/math/elementwise.h"

namespace dtrain::dist {

OverlappedSyncStrategy::OverlappedSyncStrategy(MeanCollective& mean,
                                               std::vector<GradientBucket> buckets,
                                               std::unique_ptr<optim::Optimizer> optimizer,
                                               float clip_norm)
    : OverlappedSyncStrategy(mean, nullptr, std::move(buckets), nullptr, std::move(optimizer),
                             clip_norm) {}

OverlappedSyncStrategy::OverlappedSyncStrategy(
    RingAllReduce& ring, MeanCollective& mean, std::vector<GradientBucket> buckets,
    std::unique_ptr<compress::GradientCompressor> compressor,
    std::unique_ptr<optim::Optimizer> optimizer, float clip_norm)
    : OverlappedSyncStrategy(mean, &ring, std::move(buckets), std::move(compressor),
                             std::move(optimizer), clip_norm) {}

OverlappedSyncStrategy::OverlappedSyncStrategy(
    MeanCollective& mean, RingAllReduce* ring, std::vector<GradientBucket> buckets,
    std::unique_ptr<compress::GradientCompressor> compressor,
    std::unique_ptr<optim::Optimizer> optimizer, float clip_norm)
    : mean_(mean),
      buckets_(std::move(buckets)),
      local_(std::move(optimizer), clip_norm),
      votes_(mean),
      compressor_(std::move(compressor)) {
  assert(!buckets_.empty());
  if (compressor_ != nullptr) {
    assert(ring != nullptr);
    exchange_ = std::make_unique<CompressingRing>(*ring, mean);
    for (const GradientBucket& bucket : buckets_) {
      Result<compress::PlanPart> part =
          compress::PartOf(compressor_->plan(), bucket.begin, bucket.end);
      assert(part.ok());
      parts_.push_back(part.value());
      const std::size_t votes = parts_.size() == 1 ? VotingAllReduce::kVoteFloats : 0;
      uncompressed_bytes_per_step_ += mean.BytesSent(bucket.end - bucket.begin + votes);
    }
  }
  stats_.overlapped = true;
  thread_ = std::thread([this] { ExchangeLoop(); });
}

OverlappedSyncStrategy::~OverlappedSyncStrategy() {
  {
    std::lock_guard lock(mu_);
    shutdown_ = true;
  }
  posted_cv_.notify_one();
  thread_.join();
}

void OverlappedSyncStrategy::Start(std::int64_t step, std::span<float> grad,
                                   const train::StepShare& share, bool measure) {
  // The previous step's Apply has waited for all its buckets: the exchange thread is idle.
  step_ = step;
  grad_ = std::span<float>(grad.data(), grad.size() + GradientTail());
  weight_ = train::ShareWeight(share, mean_.world());
  measure_ = measure;
  if (compressor_ == nullptr) votes_.Cast(grad_.last<VotingAllReduce::kVoteFloats>());
  std::lock_guard lock(mu_);
  posted_ = done_ = 0;
  failure_ = Status::Ok();
  step_stats_ = {};
  step_squared_ = 0.0;
  started_ = true;
}

void OverlappedSyncStrategy::Finished(std::size_t begin) {
  if (started_) Post(begin);
}

void OverlappedSyncStrategy::Post(std::size_t begin) {
  std::size_t ready = 0;
  {
    std::lock_guard lock(mu_);
    while (posted_ < buckets_.size() && buckets_[posted_].begin >= begin) ++posted_;
    ready = posted_;
  }
  if (ready > 0) posted_cv_.notify_one();
}

Status OverlappedSyncStrategy::Exchange(std::size_t b) {
  const GradientBucket& bucket = buckets_[b];
  const std::span<float> values = grad_.subspan(bucket.begin, bucket.end - bucket.begin);
  if (measure_) {
    const double squared = math::SquaredNorm(values);
    std::lock_guard lock(mu_);
    step_squared_ += squared;
  }
  if (weight_ != 1.0f) math::Scale(weight_, values);
  if (compressor_ == nullptr) return Average(b, values);
  if (b == 0) exchange_->BeginExchange();  // the step's first op carries the votes
  return compressor_->ExchangePart(step_, grad_, parts_[b], *exchange_);
}

Status OverlappedSyncStrategy::Average(std::size_t b, std::span<float> values) {
  // The first bucket carries the votes after the gradient's last float.
  const std::span<float> op_range = b == 0 ? grad_.subspan(buckets_[b].begin) : values;
  // Distinct tags for consecutive ops, every replica the same: each step's buckets in a row.
  const std::uint64_t count = buckets_.size();
  const auto base = static_cast<std::uint64_t>(step_) % (RingAllReduce::kMaxOp / count) * count;
  const auto start = std::chrono::steady_clock::now();
  Status reduced = mean_.AllReduceMean(op_range, static_cast<std::uint32_t>(base + b));
  const RingOpStats cost = mean_.LastCost();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard lock(mu_);
  step_stats_.comm_seconds += seconds;
  step_stats_.wait_seconds += cost.wait_seconds;
  step_stats_.bytes_sent += cost.bytes_sent;
  step_stats_.bytes_received += cost.bytes_received;
  return reduced;
}

void OverlappedSyncStrategy::ExchangeLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    posted_cv_.wait(lock, [&] { return shutdown_ || done_ < posted_; });
    if (shutdown_) return;
    const std::size_t b = done_;
    const bool failed = !failure_.ok();
    lock.unlock();
    // After a failure the ring refuses every op: the step's other buckets are given up.
    Status exchanged = failed ? Status::Ok() : Exchange(b);
    lock.lock();
    if (!exchanged.ok() && failure_.ok()) failure_ = std::move(exchanged);
    ++done_;
    if (done_ == buckets_.size()) done_cv_.notify_one();
  }
}

Status OverlappedSyncStrategy::Apply(std::int64_t step, std::span<float> params,
                                     std::span<float> grad, float lr,
                                     const train::StepShare& share) {
  if (!started_ || step != step_ || grad.data() != grad_.data()) {
    Start(step, grad, share, false);  // a caller that did not start the step: no overlap
  }
  Post(0);
  const auto waiting = std::chrono::steady_clock::now();
  Status failed;
  {
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, [&] { return done_ == buckets_.size(); });
    failed = failure_;
    stats_.comm_seconds += step_stats_.comm_seconds;
    stats_.wait_seconds += step_stats_.wait_seconds;
    stats_.bytes_sent += step_stats_.bytes_sent;
    stats_.bytes_received += step_stats_.bytes_received;
    if (measure_) squared_norm_ = step_squared_;
  }
  stats_.exposed_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - waiting).count();
  started_ = false;
  if (!failed.ok()) return Status::Error("step " + std::to_string(step) + ": " + failed.message());
  if (compressor_ == nullptr) {
    votes_.Read(grad_.data() + grad.size());
  } else {
    uncompressed_bytes_ += uncompressed_bytes_per_step_;
  }
  return local_.Apply(step, params, grad, lr, share);
}

train::CommStats OverlappedSyncStrategy::Stats() const {
  if (compressor_ == nullptr) return stats_;
  train::CommStats s = exchange_->Stats(*compressor_, uncompressed_bytes_);
  s.overlapped = true;
  s.exposed_seconds = stats_.exposed_seconds;
  return s;
}

Result<std::vector<std::vector<float>>> OverlappedSyncStrategy::CheckpointState() {
  if (compressor_ == nullptr) return train::Strategy::CheckpointState();
  return exchange_->GatherState(*compressor_, {});
}

Status OverlappedSyncStrategy::RestoreState(std::span<const std::span<const float>> state) {
  if (compressor_ == nullptr) return train::Strategy::RestoreState(state);
  return exchange_->RestoreState(state, *compressor_, 0).status();
}

}  // namespace dtrain::dist
