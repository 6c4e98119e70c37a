// ParameterShard's sync mode with backup workers (options.backup_workers = b > 0; ps_protocol.md,
// "Backup workers"). Each worker's link has a thread of its own that reads its requests and sends
// its replies; they share the state of parameter_shard_backups.h under mu_. Step `next` is applied
// by whichever thread completes it (the push that makes N - b, or N, or the request that ends a
// hold); the replies of the pushes it took are prepared then, so a taken worker receives exactly
// the state after its step even if the others have gone on by the time its thread sends it.
#include "core/dist/parameter_shard_backups.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <deque>
#include <memory>
#include <optional>

#include "core/dist/float_slots.h"
#include "core/dist/parameter_shard.h"
#include "core/math/elementwise.h"

namespace dtrain::dist {

namespace {

std::vector<float> MaskFloats(std::span<const std::uint64_t> masks) {
  std::vector<float> out(2 * masks.size());
  for (std::size_t i = 0; i < masks.size(); ++i) PutU64(out, 2 * i, masks[i]);
  return out;
}

std::string Ranks(const std::vector<bool>& which, bool value) {
  std::string out;
  for (std::size_t r = 0; r < which.size(); ++r) {
    if (which[r] != value) continue;
    out += (out.empty() ? "worker rank " : ", ") + std::to_string(r);
  }
  return out;
}

}  // namespace

Status ParameterShard::ServeBackups(std::span<Link* const> links) {
  Backups backups(static_cast<std::size_t>(options_.workers), options_.backup_workers,
                  params_.size(), optimizer_->steps(), params_);
  {
    std::lock_guard lock(mu_);
    failed_ = false;
    failure_ = Status::Ok();
    clocks_.SetGlobal(backups.applied);
    links_.assign(links.begin(), links.end());
    for (std::size_t r = 0; r < links.size(); ++r) {
      threads_.emplace_back([this, &backups, r, link = links[r]] {
        Status s = ServeBackupWorker(backups, *link, static_cast<int>(r));
        if (!s.ok()) FailServe(s);
      });
    }
  }
  {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return failed_ || backups.departures == backups.workers; });
  }
  std::vector<std::jthread> threads;
  {
    std::lock_guard lock(mu_);
    threads.swap(threads_);
  }
  threads.clear();  // joins them: every worker said goodbye, or every link is closed
  std::lock_guard lock(mu_);
  links_.clear();
  return failed_ ? failure_ : Status::Ok();
}

Status ParameterShard::TryApplyBackupStep(Backups& b) {
  if (!b.next || b.hold || b.regroup) return Status::Ok();
  const std::size_t need = b.take_all ? b.workers : b.workers - b.backup_workers;
  const auto held = static_cast<std::size_t>(std::count(b.held.begin(), b.held.end(), true));
  if (held < need) {
    // Fails only a step some worker waits on: after the last one every worker says goodbye.
    if (held == 0 || b.workers - b.departures >= need) return Status::Ok();
    return Status::Error(
        name_ + ": step " + std::to_string(*b.next) + " takes " +
        (b.take_all ? "every worker's gradient" : std::to_string(need) + " gradients") + " but " +
        Ranks(b.departed, true) + " said goodbye");
  }
  ApplyBackupStep(b, held);
  return Status::Ok();
}

void ParameterShard::ApplyBackupStep(Backups& b, std::size_t held) {
  // Each taken push weighted by its share of the taken pushes' rows, summed in rank order.
  std::uint64_t total = 0;
  for (std::size_t r = 0; r < b.workers; ++r) total += b.held[r] ? b.rows[r] : 0;
  std::uint64_t mask = 0;
  for (std::size_t r = 0; r < b.workers; ++r) {
    if (!b.held[r]) continue;
    const float weight = total > 0 ? static_cast<float>(static_cast<double>(b.rows[r]) / total)
                                   : static_cast<float>(1.0 / static_cast<double>(held));
    if (mask == 0) {
      math::ScaleInto(weight, b.grads[r], b.sum);
    } else {
      math::Axpy(weight, b.grads[r], b.sum);
    }
    mask |= std::uint64_t{1} << r;
  }
  if (options_.elastic && options_.shards > 1) KeepUndo();
  optimizer_->Step(params_, b.sum, b.lr);
  b.Publish(params_);

  PsHeader header;
  header.from = static_cast<std::uint32_t>(options_.shard);
  header.clock = *b.next;
  header.vote = b.vote;
  header.flags = b.checkpoint;
  const std::uint64_t masks[] = {mask};
  for (std::size_t r = 0; r < b.workers; ++r) {
    if (!b.held[r]) continue;
    // Without backup workers (an elastic membership's b' = 0) the reply is the plain sync one: no
    // mask.
    b.replies[r] = Backups::Reply{header, b.state,
                                  b.backup_workers > 0 ? MaskFloats(masks) : std::vector<float>()};
    b.held[r] = false;
    b.expected[r] = *b.next + 1;
    ++b.taken[r];
  }
  b.masks.push_back(mask);
  b.last_vote = b.vote;
  b.hold = b.vote != kNoVote || b.checkpoint != 0;
  b.vote = kNoVote;
  b.checkpoint = 0;
  b.take_all = false;
  b.first.reset();
  ++*b.next;
  ++b.applied;
  // Masks no worker can miss any more: those before the least step a worker still has to push.
  std::uint64_t least = *b.next;
  for (std::size_t r = 0; r < b.workers; ++r) {
    if (!b.departed[r]) least = std::min(least, b.expected[r]);
  }
  for (; b.masks_from < least && !b.masks.empty(); ++b.masks_from) b.masks.pop_front();

  stats_.steps = optimizer_->steps();
  stats_.pushes_applied += held;
  stats_.staleness.Record(0, held);
  clocks_.SetGlobal(b.applied);
  changed_.notify_all();
}

std::string ParameterShard::BackupWait(const Backups& b) const {
  if (b.hold) {
    return "still held after step " + std::to_string(*b.next - 1) +
           " (a checkpoint or a stop follows it) until worker rank 0's next request";
  }
  std::vector<bool> missing(b.workers);
  for (std::size_t r = 0; r < b.workers; ++r) missing[r] = !b.held[r] && !b.departed[r];
  return "step " + std::to_string(b.next.value_or(0)) + " (taking " +
         (b.take_all ? "every gradient" : "all but " + std::to_string(b.backup_workers)) +
         ") still waits for the push of " + Ranks(missing, true);
}

Status ParameterShard::ServeBackupWorker(Backups& b, Link& link, int rank, bool greeted) {
  const auto r = static_cast<std::size_t>(rank);
  PushDecoder decoder;  // raw pushes: compressed ones are refused at the hello
  for (;;) {
    Result<std::pair<std::uint32_t, PsHeader>> request =
        ReceiveRequest(link, rank, Worker(rank) + ": waiting for its next request");
    if (!request.ok()) {
      std::lock_guard lock(mu_);
      if (failed_) return Status::Ok();  // closed because of another failure: not the cause
      return request.status();
    }
    const auto [tag, h] = request.value();
    const auto kind = static_cast<PsMessage>(tag & 0x7F);
    if (!greeted && kind != PsMessage::kHello) return Unexpected(rank, tag, "before its hello");
    if (kind == PsMessage::kPush) {
      Status got =
          decoder.Receive(link, PsDataTag(tag), h, b.grads[r], Clock::now() + options_.timeout);
      if (!got.ok()) return Fail(Worker(rank) + "'s push of step " + std::to_string(h.clock), got);
    }
    std::unique_lock lock(mu_);
    if (failed_) return Status::Ok();
    // Elastic: the membership is done. A late push is still answered as late (backup workers),
    // so its worker stands at the last step applied, with its masks, like the others.
    const bool late =
        kind == PsMessage::kPush && b.next && h.clock < *b.next && h.clock == b.expected[r];
    if (b.regroup && kind != PsMessage::kGoodbye && !late) {
      lock.unlock();
      if (Status s = AnswerRegroup(link, rank, kind, h.clock); !s.ok()) return s;
      continue;
    }
    // Rank 0's next request after a checkpoint's or a stop's step ends the hold; each case below
    // reads the state it answers with before it tries to apply the next step.
    if (rank == 0) b.hold = false;
    switch (kind) {
      case PsMessage::kHello: {
        if (greeted) return Unexpected(rank, tag, "a second hello");
        greeted = true;
        if ((h.flags & (kPsBf16Pushes | kPsSparsePushes)) != 0) {
          return Status::Error(name_ + ": " + Worker(rank) +
                               " announced compressed pushes, which backup workers do not take");
        }
        const std::shared_ptr<const std::vector<float>> state = b.state;
        const std::uint64_t applied = b.applied, steps = optimizer_->steps();
        lock.unlock();
        if (Status s = AnswerHello(link, rank, h, decoder, *state, applied, steps); !s.ok()) {
          return s;
        }
        break;
      }
      case PsMessage::kFetch: {
        PsHeader reply;
        reply.from = static_cast<std::uint32_t>(options_.shard);
        reply.clock = b.applied;
        reply.basis = stats_.pushes_applied;
        const std::shared_ptr<const std::vector<float>> state = b.state;
        if (Status s = TryApplyBackupStep(b); !s.ok()) return s;
        lock.unlock();
        const std::span<const float> parts[] = {*state};
        if (Status s = SendReply(link, rank, PsMessage::kFetch, reply, parts); !s.ok()) return s;
        break;
      }
      case PsMessage::kSnapshot: {
        std::vector<math::FloatBuffer> state;
        for (std::span<float> v : optimizer_->StateVectors())
          state.emplace_back(v.begin(), v.end());
        const std::shared_ptr<const std::vector<float>> params = b.state;
        const std::uint64_t steps = optimizer_->steps(), applied = b.applied;
        if (Status s = TryApplyBackupStep(b); !s.ok()) return s;
        lock.unlock();
        std::vector<std::span<const float>> state_view(state.begin(), state.end());
        // Every worker's clock is g: snapshots come after steps that took every gradient.
        const std::vector<std::uint64_t> clocks(b.workers, applied);
        if (Status s = AnswerSnapshot(link, rank, *params, state_view, steps, applied, clocks);
            !s.ok()) {
          return s;
        }
        break;
      }
      case PsMessage::kResidual:
        return Unexpected(rank, tag, "a residual (backup workers take raw pushes only)");
      case PsMessage::kGoodbye: {
        b.departed[r] = true;
        ++b.departures;
        if (Status s = TryApplyBackupStep(b); !s.ok()) return s;
        changed_.notify_all();
        PsHeader reply;
        reply.from = static_cast<std::uint32_t>(options_.shard);
        reply.clock = b.taken[r];
        lock.unlock();
        return SendReply(link, rank, PsMessage::kGoodbye, reply, {});
      }
      case PsMessage::kPush:
        if (Status s = ServeBackupPush(b, link, rank, h, lock); !s.ok()) return s;
        break;
    }
  }
}

Status ParameterShard::ServeBackupPush(Backups& b, Link& link, int rank, const PsHeader& h,
                                       std::unique_lock<std::mutex>& lock) {
  const auto r = static_cast<std::size_t>(rank);
  if (!b.next) {
    b.next = h.clock;
    b.masks_from = h.clock;
    std::fill(b.expected.begin(), b.expected.end(), h.clock);
  }
  const std::string what = Worker(rank) + " pushed step " + std::to_string(h.clock);
  if (h.clock != b.expected[r]) {
    return Status::Error(name_ + ": " + what + " where the shard expected step " +
                         std::to_string(b.expected[r]));
  }
  if (b.expected[r] < *b.next) return AnswerLatePush(b, link, rank, h, lock);
  undo_.valid = false;  // a push of step next: every shard applied the steps before it
  ++stats_.pushes_received;
  if (!b.first) {
    b.first = rank;
    b.lr = h.lr;
    b.total_rows = h.total_rows;
  } else if (std::bit_cast<std::uint32_t>(h.lr) != std::bit_cast<std::uint32_t>(b.lr)) {
    return Status::Error(name_ + ": " + what + " with lr " + std::to_string(h.lr) + " where " +
                         Worker(*b.first) + " pushed it with lr " + std::to_string(b.lr));
  } else if (h.total_rows != b.total_rows) {
    return Status::Error(name_ + ": " + what + " of " + std::to_string(h.total_rows) +
                         " rows in all where " + Worker(*b.first) + " says " +
                         std::to_string(b.total_rows));
  }
  b.held[r] = true;
  b.rows[r] = h.rows;
  b.vote = std::max(b.vote, h.vote);
  b.checkpoint |= h.flags & kPsCheckpoint;
  b.take_all = b.take_all || (h.flags & (kPsTakeAll | kPsCheckpoint)) != 0 || h.vote != kNoVote;
  if (Status s = TryApplyBackupStep(b); !s.ok()) return s;
  changed_.wait_until(lock, Clock::now() + options_.timeout,
                      [&] { return failed_ || b.replies[r].has_value() || b.regroup; });
  if (failed_) return Status::Ok();  // the link is closed: the next receive ends this worker
  if (!b.replies[r] && b.regroup) {  // elastic: its step can no longer be applied
    lock.unlock();
    return AnswerRegroup(link, rank, PsMessage::kPush, h.clock);
  }
  if (!b.replies[r]) {
    return Status::Error(name_ + ": " + what + ": timeout: after " +
                         std::to_string(options_.timeout.count()) + " ms, " + BackupWait(b));
  }
  const Backups::Reply reply = std::move(*b.replies[r]);
  b.replies[r].reset();
  lock.unlock();
  const std::span<const float> parts[] = {*reply.state, reply.masks};
  return SendReply(link, rank, PsMessage::kPush, reply.header,
                   std::span(parts).first(reply.masks.empty() ? 1 : 2),
                   "step " + std::to_string(reply.header.clock));
}

Status ParameterShard::AnswerLatePush(Backups& b, Link& link, int rank, const PsHeader& h,
                                      std::unique_lock<std::mutex>& lock) {
  const std::string what = Worker(rank) + " pushed step " + std::to_string(h.clock);
  if ((h.flags & kPsTakeAll) != 0) {
    return Status::Error(name_ + ": " + what + " asking to take every gradient, but step " +
                         std::to_string(h.clock) + " was applied without it");
  }
  ++stats_.pushes_dropped;
  // Its proposal or vote goes to the step being collected, which then takes every gradient.
  b.vote = std::max(b.vote, h.vote);
  b.checkpoint |= h.flags & kPsCheckpoint;
  b.take_all = b.take_all || h.vote != kNoVote || (h.flags & kPsCheckpoint) != 0;
  PsHeader reply;
  reply.from = static_cast<std::uint32_t>(options_.shard);
  reply.clock = *b.next - 1;
  reply.vote = b.last_vote;
  const auto missed = b.masks.begin() + static_cast<std::ptrdiff_t>(h.clock - b.masks_from);
  const std::vector<float> masks = MaskFloats(std::vector<std::uint64_t>(missed, b.masks.end()));
  const std::shared_ptr<const std::vector<float>> state = b.state;
  b.expected[static_cast<std::size_t>(rank)] = *b.next;
  // The step being collected may have become one that can no longer get every push it takes.
  if (Status s = TryApplyBackupStep(b); !s.ok()) return s;
  lock.unlock();
  const std::span<const float> parts[] = {*state, masks};
  return SendReply(link, rank, PsMessage::kPush, reply, parts,
                   "late push of step " + std::to_string(h.clock));
}

}  // namespace dtrain::dist
