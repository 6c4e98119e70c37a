#include "core/dist/sandblaster_worker.h"

#include <algorithm>
#include <limits>

#include "core/dist/sandblaster_messages.h"
#include "core/dist/shard_ranges.h"
#include "core/math/buffer.h"
#include "core/math/elementwise.h"

namespace dtrain::dist {
namespace {

class Worker {
 public:
  Worker(Link& coordinator, std::span<Link* const> shards, const SandblasterWorkerOptions& o,
         const UnitFunction& unit)
      : coordinator_(coordinator),
        shards_(shards),
        options_(o),
        unit_(unit),
        ranges_(ShardRanges(o.num_params, static_cast<int>(shards.size()))),
        params_(o.num_params),
        sum_(o.num_params),
        scratch_(o.num_params) {}

  Status Run() {
    if (Status s = Tell({.kind = SbKind::kReady}); !s.ok()) return s;
    while (true) {
      // An order may be long in coming: the coordinator waits for other workers' units.
      Result<SbHeader> order = RecvSb(coordinator_, SbTag(SbKind::kOrder), NoDeadline());
      if (!order.ok()) return order.status();
      const SbHeader& h = order.value();
      if ((h.flags & kSbDrop) != 0) Clear(sum_, sum_loss_, sum_correct_);
      if ((h.flags & kSbAccepted) != 0) {
        math::Axpy(1.0f, scratch_, sum_);
        sum_loss_ += scratch_loss_;
        sum_correct_ += scratch_correct_;
      }
      if ((h.flags & kSbStop) != 0) return Goodbye();
      if ((h.flags & kSbFlush) != 0) {
        if (Status s = Push(h.pass, (h.flags & kSbCompute) == 0); !s.ok()) return s;
      }
      if ((h.flags & kSbCompute) != 0) {
        if (Status s = Compute(h); !s.ok()) return s;
      }
    }
  }

 private:
  static void Clear(math::FloatBuffer& v, double& loss, std::uint64_t& correct) {
    std::fill(v.begin(), v.end(), 0.0f);
    loss = 0.0;
    correct = 0;
  }
  Deadline Soon() const { return Clock::now() + options_.timeout; }

  Status Tell(SbHeader h) {
    h.from = static_cast<std::uint32_t>(options_.rank);
    return SendSb(coordinator_, h, {}, Soon());
  }

  // Fetches the pass's point; *stale when the shards have finished that pass already.
  Status Fetch(std::uint64_t pass, bool* stale) {
    *stale = false;
    const Deadline deadline = Soon();
    SbHeader h{.kind = SbKind::kFetch, .from = static_cast<std::uint32_t>(options_.rank)};
    h.pass = pass;
    for (Link* shard : shards_) {
      if (Status s = SendSb(*shard, h, {}, deadline); !s.ok()) return s;
    }
    for (std::size_t s = 0; s < shards_.size(); ++s) {
      Result<SbHeader> r = RecvSb(*shards_[s], SbReply(SbKind::kFetch), deadline);
      if (!r.ok()) return r.status();
      if ((r.value().flags & kSbStale) != 0) {
        *stale = true;
        continue;
      }
      Status got = shards_[s]->Recv(SbData(SbReply(SbKind::kFetch)),
                                    std::span(params_).subspan(ranges_[s].begin, ranges_[s].size()),
                                    deadline);
      if (!got.ok()) return got;
    }
    if (!*stale) params_pass_ = pass;
    return Status::Ok();
  }

  Status Push(std::uint64_t pass, bool awaiting_order) {
    const Deadline deadline = Soon();
    SbHeader h{.kind = SbKind::kPush, .from = static_cast<std::uint32_t>(options_.rank)};
    h.pass = pass;
    for (std::size_t s = 0; s < shards_.size(); ++s) {
      const std::span<const float> slice =
          std::span(sum_).subspan(ranges_[s].begin, ranges_[s].size());
      if (Status st = SendSb(*shards_[s], h, slice, deadline); !st.ok()) return st;
    }
    for (Link* shard : shards_) {
      if (Result<SbHeader> r = RecvSb(*shard, SbReply(SbKind::kPush), deadline); !r.ok()) {
        return r.status();
      }
    }
    SbHeader pushed{.kind = SbKind::kPushed, .value = sum_loss_};
    pushed.pass = pass;
    pushed.count = sum_correct_;
    pushed.flags = awaiting_order ? kSbAwaitingOrder : 0u;
    Clear(sum_, sum_loss_, sum_correct_);
    return Tell(pushed);
  }

  Status Compute(const SbHeader& order) {
    bool stale = false;
    if (params_pass_ != order.pass) {
      if (Status s = Fetch(order.pass, &stale); !s.ok()) return s;
    }
    std::fill(scratch_.begin(), scratch_.end(), 0.0f);
    const model::LossValue v =
        stale ? model::LossValue{} : unit_(params_, order.first, order.last, scratch_);
    scratch_loss_ = v.loss_sum;
    scratch_correct_ = static_cast<std::uint64_t>(v.correct);
    SbHeader done{.kind = SbKind::kDone, .value = v.loss_sum};
    done.pass = order.pass;
    done.unit = order.unit;
    done.count = scratch_correct_;
    done.flags = stale ? kSbStale : 0u;
    return Tell(done);
  }

  Status Goodbye() {
    const Deadline deadline = Soon();
    const SbHeader bye{.kind = SbKind::kGoodbye, .from = static_cast<std::uint32_t>(options_.rank)};
    for (Link* shard : shards_) {
      if (Status s = SendSb(*shard, bye, {}, deadline); !s.ok()) return s;
    }
    return SendSb(coordinator_, bye, {}, deadline);
  }

  Link& coordinator_;
  std::span<Link* const> shards_;
  const SandblasterWorkerOptions options_;
  const UnitFunction& unit_;
  std::vector<ShardRange> ranges_;
  math::FloatBuffer params_, sum_, scratch_;
  double sum_loss_ = 0.0, scratch_loss_ = 0.0;
  std::uint64_t sum_correct_ = 0, scratch_correct_ = 0;
  std::uint64_t params_pass_ = std::numeric_limits<std::uint64_t>::max();
};

}  // namespace

Status RunSandblasterWorker(Link& coordinator, std::span<Link* const> shards,
                            const SandblasterWorkerOptions& options, const UnitFunction& unit) {
  return Worker(coordinator, shards, options, unit).Run();
}

}  // namespace dtrain::dist
