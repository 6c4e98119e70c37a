#include "core/dist/vector_shard.h"

#include <algorithm>
#include <thread>

#include "core/dist/sandblaster_messages.h"

namespace dtrain::dist {
VectorShard::VectorShard(VectorShardOptions options)
    : options_(std::move(options)),
      name_("shard " + std::to_string(options_.shard) + " of " + std::to_string(options_.shards) +
            " [" + std::to_string(options_.begin) + ", " + std::to_string(options_.end) + ")"),
      slices_(options_.vectors, options_.end - options_.begin),
      sum_(options_.end - options_.begin) {
  for (const auto& [b, e] : options_.weights) {
    const std::size_t from = std::max(b, options_.begin), to = std::min(e, options_.end);
    if (from < to) local_weights_.emplace_back(from - options_.begin, to - options_.begin);
  }
}

Status VectorShard::CheckVector(std::uint32_t index) const {
  if (index < static_cast<std::uint32_t>(slices_.count())) return Status::Ok();
  return Status::Error(name_ + ": the coordinator named vector " + std::to_string(index) +
                       ", of " + std::to_string(slices_.count()));
}

double VectorShard::FinishPass(int point, int grad, std::uint64_t rows, double weight_decay) {
  const std::span<const float> x = slices_[point];
  const std::span<float> g = slices_[grad];
  const float scale = 1.0f / static_cast<float>(rows);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = sum_[i] * scale;
  double squares = 0.0;
  const auto wd = static_cast<float>(weight_decay);
  for (const auto& [b, e] : local_weights_) {
    for (std::size_t i = b; i < e; ++i) {
      g[i] += wd * x[i];
      squares += double(x[i]) * double(x[i]);
    }
  }
  return 0.5 * weight_decay * squares;
}

Status VectorShard::Answer(Link& coordinator, const SbHeader& h, bool* done) {
  const Deadline deadline = Clock::now() + options_.timeout;
  SbHeader reply{.kind = h.kind, .from = static_cast<std::uint32_t>(options_.shard)};
  reply.pass = h.pass;
  std::lock_guard lock(mu_);
  for (std::uint32_t v : {h.a, h.b}) {
    if (Status s = CheckVector(v); !s.ok()) return s;
  }
  const int a = static_cast<int>(h.a), b = static_cast<int>(h.b);
  switch (h.kind) {
    case SbKind::kDot:
      reply.value = slices_.Dot(a, b);
      return SendSb(coordinator, reply, {}, deadline, true);
    case SbKind::kAxpy:
      slices_.Axpy(h.value, a, b);
      return Status::Ok();
    case SbKind::kScale:
      slices_.Scale(h.value, a);
      return Status::Ok();
    case SbKind::kCopy:
      slices_.Copy(a, b);
      return Status::Ok();
    case SbKind::kBeginPass:
      pass_ = h.pass;
      point_ = a;
      in_pass_ = true;
      std::fill(sum_.begin(), sum_.end(), 0.0f);
      return SendSb(coordinator, reply, {}, deadline, true);
    case SbKind::kFinishPass:
      if (!in_pass_ || h.pass != pass_ || h.count == 0) {
        return Status::Error(name_ + ": finish of pass " + std::to_string(h.pass) +
                             ", which is not the pass in progress");
      }
      in_pass_ = false;
      reply.value = FinishPass(point_, b, h.count, h.value);
      return SendSb(coordinator, reply, {}, deadline, true);
    case SbKind::kLoad:
      return coordinator.Recv(SbData(SbTag(SbKind::kLoad)), slices_[a], deadline);
    case SbKind::kSnapshot:
      return SendSb(coordinator, reply, slices_[a], deadline, true);
    case SbKind::kGoodbye:
      *done = true;
      return Status::Ok();
    default:
      return Status::Error(name_ + ": the coordinator sent a " + SbKindName(h.kind) +
                           " request, which is not the coordinator's to send");
  }
}

void VectorShard::ServeWorker(Link& link) {
  const std::size_t length = options_.end - options_.begin;
  math::FloatBuffer pushed(length);
  auto fail = [&] {
    link.Close();
    std::lock_guard lock(mu_);
    ++workers_done_;
    finished_.notify_all();
  };
  while (true) {
    std::uint32_t tag = 0;
    Result<SbHeader> h = RecvAnySb(link, &tag, NoDeadline());
    if (!h.ok()) return fail();
    const Deadline deadline = Clock::now() + options_.timeout;
    SbHeader reply{.kind = h.value().kind, .from = static_cast<std::uint32_t>(options_.shard)};
    reply.pass = h.value().pass;
    switch (h.value().kind) {
      case SbKind::kFetch: {
        std::unique_lock lock(mu_);
        // A pass that ended before this worker came to fetch (backups did its unit): stale.
        const bool stale = !in_pass_ || h.value().pass != pass_;
        if (stale) reply.flags = kSbStale;
        // Sent under the lock: the point must not change while it goes out (a fetch is small
        // next to a pass, and nothing else waits for the lock during a pass but other fetches).
        const std::span<const float> point = stale ? std::span<const float>() : slices_[point_];
        if (!SendSb(link, reply, point, deadline, true).ok()) return lock.unlock(), fail();
        break;
      }
      case SbKind::kPush: {
        if (!link.Recv(SbData(SbTag(SbKind::kPush)), pushed, deadline).ok()) return fail();
        {
          std::lock_guard lock(mu_);
          if (in_pass_ && h.value().pass == pass_) {
            for (std::size_t i = 0; i < length; ++i) sum_[i] += pushed[i];
          } else {
            // A pass the coordinator began again (a worker lost while pushing): not added.
            reply.flags = kSbStale;
          }
        }
        if (!SendSb(link, reply, {}, deadline, true).ok()) return fail();
        break;
      }
      case SbKind::kGoodbye: {
        std::lock_guard lock(mu_);
        ++workers_done_;
        finished_.notify_all();
        return;
      }
      default:
        return fail();
    }
  }
}

Status VectorShard::Serve(Link& coordinator, std::span<Link* const> workers) {
  std::vector<std::jthread> threads;
  for (Link* link : workers) threads.emplace_back([this, link] { ServeWorker(*link); });
  Status status;
  for (bool done = false; !done && status.ok();) {
    std::uint32_t tag = 0;
    Result<SbHeader> h = RecvAnySb(coordinator, &tag, NoDeadline());
    status = h.ok() ? Answer(coordinator, h.value(), &done) : h.status();
  }
  {
    std::unique_lock lock(mu_);
    finished_.wait_for(lock, options_.timeout,
                       [&] { return workers_done_ == static_cast<int>(workers.size()); });
  }
  for (Link* link : workers) link->Close();
  threads.clear();
  if (!status.ok()) coordinator.Close();
  return status;
}

}  // namespace dtrain::dist
