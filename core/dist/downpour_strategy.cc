#include "core/dist/downpour_strategy.h"

#include <algorithm>

#include "core/math/elementwise.h"
#include "core/optim/clip.h"

namespace dtrain::dist {
namespace {

// The client counts warm-up in pushes (their clocks): the pushes of the warm-up's steps.
compress::Settings PushCompression(const DownpourOptions& options) {
  compress::Settings s = options.compression;
  s.warmup_steps = (s.warmup_steps + options.push_every - 1) / options.push_every;
  return s;
}

}  // namespace

DownpourStrategy::DownpourStrategy(std::span<Link* const> shard_links, std::size_t num_params,
                                   DownpourOptions options)
    : options_([&] {
        options.push_every = std::max(options.push_every, 1);
        options.fetch_every = std::max(options.fetch_every, 1);
        return options;
      }()),
      num_params_(num_params),
      shards_(shard_links.size()),
      client_(shard_links, {.rank = options_.rank,
                            .workers = options_.workers,
                            .num_params = num_params,
                            .mode = PsMode::kAsync,
                            .max_staleness = options_.max_staleness,
                            .timeout = options_.timeout,
                            .compression = PushCompression(options_)}),
      accum_{math::FloatBuffer(num_params), math::FloatBuffer(num_params)},
      window_basis_(shards_, 0),
      cached_clock_(shards_, 0),
      fetched_(num_params),
      fetched_clock_(shards_, 0),
      comm_([this] { CommLoop(); }) {}

DownpourStrategy::~DownpourStrategy() {
  // Without Finish the replica failed: it leaves without a goodbye, so its shards count it absent
  // (a successor may rejoin in its place), not departed.
  if (!finished_) {
    finished_ = true;
    StopThread();
  }
}

std::uint64_t DownpourStrategy::Post(Job job) {
  std::lock_guard lock(mu_);
  const std::uint64_t seq = ++posted_;
  jobs_.emplace_back(seq, std::move(job));
  cv_.notify_all();
  return seq;
}

Status DownpourStrategy::WaitFor(std::uint64_t seq) {
  const Clock::time_point start = Clock::now();
  std::unique_lock lock(mu_);
  if (done_ < seq) {
    cv_.wait(lock, [&] { return done_ >= seq; });  // every job has its own deadlines
    stats_.wait_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  }
  return failure_;
}

Status DownpourStrategy::Failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}

void DownpourStrategy::CommLoop() {
  for (;;) {
    std::pair<std::uint64_t, Job> job;
    bool skip;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stop_ with nothing left to do
      job = std::move(jobs_.front());
      jobs_.pop_front();
      skip = !failure_.ok();  // after a failure the links may be mid-message: run nothing more
    }
    Status s = skip ? Status::Ok() : job.second();
    std::lock_guard lock(mu_);
    if (!s.ok() && failure_.ok()) failure_ = s;
    done_ = job.first;
    cv_.notify_all();
  }
}

void DownpourStrategy::StopThread() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (comm_.joinable()) comm_.join();
}

Status DownpourStrategy::Connect(std::span<float> params, std::int64_t /*step*/) {
  if (connected_) return Failure();
  connected_ = true;
  const std::uint64_t seq = Post([this, params] {
    Status s = client_.Hello(params, cached_clock_);
    pushes_ = client_.own_clock();  // a restarted worker goes on counting where it rejoined
    return s;
  });
  return WaitFor(seq);
}

Status DownpourStrategy::Apply(std::int64_t step, std::span<float> params, std::span<float> grad,
                               float lr, const train::StepShare& /*share*/) {
  if (finished_ || settled_) {
    return Status::Error(Me() + ": step " + std::to_string(step) + " after the last");
  }
  if (grad.size() != num_params_ || params.size() != num_params_) {
    return Status::Error(Me() + ": step " + std::to_string(step) + ": " +
                         std::to_string(grad.size()) + " gradient floats where " +
                         std::to_string(num_params_) + " were expected");
  }
  if (!connected_) {
    if (Status s = Connect({}, 0); !s.ok()) return s;
  }
  if (Status s = Failure(); !s.ok()) return s;
  if (options_.clip_norm > 0.0f) optim::ClipByGlobalNorm(grad, options_.clip_norm);
  math::FloatBuffer& sum = accum_[static_cast<std::size_t>(cur_)];
  if (window_steps_ == 0) {
    std::copy(grad.begin(), grad.end(), sum.begin());
    window_basis_ = cached_clock_;  // g never decreases: the window's oldest parameters
  } else {
    math::Axpy(1.0f, grad, sum);
  }
  window_lr_ += lr;
  ++window_steps_;
  ++local_steps_;
  if (local_steps_ % static_cast<std::uint64_t>(options_.push_every) == 0) PushWindow();
  if (local_steps_ % static_cast<std::uint64_t>(options_.fetch_every) == 0) StartFetch(0);
  SwapIn(params);
  if (Status s = EnforceBound(params); !s.ok()) return s;
  return Failure();
}

void DownpourStrategy::PushWindow() {
  const int buffer = cur_;
  const std::uint64_t clock = pushes_;
  const float lr = static_cast<float>(window_lr_ / static_cast<double>(window_steps_));
  const std::uint64_t oldest = *std::min_element(window_basis_.begin(), window_basis_.end());
  stats_.max_staleness = std::max(stats_.max_staleness, clock - std::min(oldest, clock));
  push_seq_[static_cast<std::size_t>(buffer)] =
      Post([this, buffer, clock, lr, basis = window_basis_] {
        return client_.Push(clock, accum_[static_cast<std::size_t>(buffer)], lr, basis);
      });
  ++pushes_;
  ++stats_.pushes;
  window_steps_ = 0;
  window_lr_ = 0.0;
  cur_ ^= 1;
  // The next window accumulates into the other buffer: its push must have been sent.
  if (push_seq_[static_cast<std::size_t>(cur_)] != 0) {
    (void)WaitFor(push_seq_[static_cast<std::size_t>(cur_)]);  // a failure is reported by Apply
  }
}

void DownpourStrategy::StartFetch(std::uint64_t min_clock) {
  if (fetch_in_flight_) return;  // the one on its way will do
  fetch_in_flight_ = true;
  fetch_seq_ = Post([this, min_clock] {
    Status s = client_.Fetch(min_clock, fetched_, fetched_clock_);
    if (s.ok()) {
      std::lock_guard lock(mu_);
      fetch_ready_ = true;
    }
    return s;
  });
}

bool DownpourStrategy::SwapIn(std::span<float> params) {
  {
    std::lock_guard lock(mu_);
    if (!fetch_ready_) return false;
    fetch_ready_ = false;
  }
  std::copy(fetched_.begin(), fetched_.end(), params.begin());
  cached_clock_ = fetched_clock_;
  fetch_in_flight_ = false;
  ++stats_.fetches;
  return true;
}

Status DownpourStrategy::EnforceBound(std::span<float> params) {
  const auto s = static_cast<std::uint64_t>(options_.max_staleness);
  if (s == 0 || pushes_ <= s) return Status::Ok();
  const std::uint64_t need = pushes_ - s;
  while (*std::min_element(cached_clock_.begin(), cached_clock_.end()) < need) {
    if (fetch_in_flight_) {
      if (Status st = WaitFor(fetch_seq_); !st.ok()) return st;
      if (!SwapIn(params)) {
        return Status::Error(Me() + ": internal error: a finished fetch left no parameters");
      }
      continue;
    }
    ++stats_.forced_fetches;
    StartFetch(need);
  }
  return Status::Ok();
}

train::CommStats DownpourStrategy::Stats() const {
  train::CommStats c = client_.Stats();
  c.wait_seconds = stats_.wait_seconds;
  return c;
}

Status DownpourStrategy::Settle(std::span<float> params) {
  if (finished_) return Status::Error(Me() + ": settling after goodbye");
  if (Status s = Failure(); !s.ok()) return s;
  if (window_steps_ > 0) PushWindow();
  Result<PsSnapshot> snap = Snapshot();
  if (!snap.ok()) return snap.status();
  if (snap.value().params.size() != params.size()) {
    return Status::Error(Me() + ": the shards hold " +
                         std::to_string(snap.value().params.size()) + " parameters, expected " +
                         std::to_string(params.size()));
  }
  std::copy(snap.value().params.begin(), snap.value().params.end(), params.begin());
  settled_ = std::move(snap.value());
  return Status::Ok();
}

Result<PsSnapshot> DownpourStrategy::Snapshot() {
  if (settled_) return *settled_;
  if (finished_) return Status::Error(Me() + ": snapshot after goodbye");
  if (!connected_) {
    if (Status s = Connect({}, 0); !s.ok()) return s;
  }
  std::optional<Result<PsSnapshot>> snap;
  const std::uint64_t seq = Post([this, &snap] {
    snap = client_.Snapshot();
    return snap->status();
  });
  if (Status s = WaitFor(seq); !s.ok()) return s;
  return std::move(*snap);
}

Status DownpourStrategy::Finish() {
  if (finished_) return finish_status_;
  finished_ = true;
  Status s = Failure();
  if (s.ok() && !connected_) s = Connect({}, 0);
  if (s.ok()) {
    if (window_steps_ > 0) PushWindow();
    const std::uint64_t seq = Post([this, clock = pushes_] { return client_.Goodbye(clock); });
    s = WaitFor(seq);
  }
  StopThread();
  finish_status_ = s;
  return s;
}

}  // namespace dtrain::dist
