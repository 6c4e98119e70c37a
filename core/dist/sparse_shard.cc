#include "core/dist/sparse_shard.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <thread>

#include "core/dist/parameter_shard.h"
#include "core/sparse/key_shards.h"

namespace dtrain::dist {
namespace {

// The most keys one pull or push may carry (a batch's distinct features): a header claiming more
// is refused before anything is allocated from it.
constexpr std::size_t kMaxRequestKeys = std::size_t{1} << 26;

std::string ShardName(const SparseShardOptions& o) {
  return "sparse shard " + std::to_string(o.shard) + " of " + std::to_string(o.shards);
}

}  // namespace

void KeysToFloats(std::span<const std::uint32_t> keys, std::span<float> out) {
  for (std::size_t i = 0; i < keys.size(); ++i) out[i] = std::bit_cast<float>(keys[i]);
}

void FloatsToKeys(std::span<const float> in, std::span<std::uint32_t> out) {
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = std::bit_cast<std::uint32_t>(in[i]);
}

SparseShard::SparseShard(SparseShardOptions options)
    : options_(std::move(options)),
      name_(ShardName(options_)),
      model_(options_.model),
      table_(model_, options_.optimizer, options_.seed) {
  if (options_.shards < 1 || options_.shard < 0 || options_.shard >= options_.shards ||
      options_.workers < 1) {
    invalid_ = Status::Error(name_ + ": invalid layout (" + std::to_string(options_.workers) +
                             " workers)");
  } else if (options_.max_staleness < 0 ||
             (options_.max_staleness > 0 && options_.mode != PsMode::kAsync)) {
    invalid_ = Status::Error(name_ + ": max_staleness " + std::to_string(options_.max_staleness) +
                             " (a bound >= 0, in async mode only)");
  } else if (Status fits = sparse::CheckSparseOptimizer(options_.optimizer); !fits.ok()) {
    invalid_ = Status::Error(name_ + ": " + fits.message());
  }
  const auto workers = static_cast<std::size_t>(std::max(options_.workers, 0));
  clocks_ = WorkerClocks(workers);
  pending_.assign(workers, {});
}

Status SparseShard::Load(sparse::KeyTableState part) {
  if (!invalid_.ok()) return invalid_;
  for (const std::uint32_t key : part.keys) {
    if (sparse::ShardOfKey(key, options_.shards) != options_.shard) {
      return Status::Error(name_ + ": key " + std::to_string(key) + " belongs to another shard");
    }
  }
  std::lock_guard lock(mu_);
  if (Status restored = table_.Restore(std::move(part)); !restored.ok()) {
    return Status::Error(name_ + ": " + restored.message());
  }
  stats_.keys = table_.size();
  return Status::Ok();
}

SparseShardStats SparseShard::Stats() const {
  std::lock_guard lock(mu_);
  SparseShardStats s = stats_;
  s.global_clock = clocks_.global();
  return s;
}

void SparseShard::Fail(const Status& status, std::span<Link* const> links) {
  {
    std::lock_guard lock(mu_);
    if (failed_) return;
    failed_ = true;
    failure_ = status;
  }
  changed_.notify_all();
  for (Link* link : links) link->Close();
}

Status SparseShard::Depart(int rank) {
  {
    std::lock_guard lock(mu_);
    const bool gathering = std::any_of(pending_.begin(), pending_.end(),
                                       [](const Pending& p) { return p.buffers != nullptr; });
    if (options_.mode == PsMode::kSync && gathering) {  // its push of that step will never come
      return Status::Error("goodbye after step " +
                           std::to_string(clocks_.clock(static_cast<std::size_t>(rank))) +
                           " while the others' pushes of that step wait");
    }
    clocks_.Depart(static_cast<std::size_t>(rank));
  }
  changed_.notify_all();
  return Status::Ok();
}

Status SparseShard::AwaitClock(std::unique_lock<std::mutex>& lock, int rank, std::uint64_t clock) {
  const auto s = static_cast<std::uint64_t>(options_.max_staleness);
  if (s == 0 || clock <= s) return Status::Ok();
  const std::uint64_t need = clock - s;
  const bool reached = changed_.wait_until(lock, Clock::now() + options_.timeout,
                                           [&] { return failed_ || clocks_.global() >= need; });
  if (failed_) return Status::Error("the shard failed while a pull waited");
  if (reached) return Status::Ok();
  return Status::Error("a pull at clock " + std::to_string(clock) + " waited " +
                       std::to_string(options_.timeout.count()) + " ms for global clock " +
                       std::to_string(need) + " (max_staleness " + std::to_string(s) +
                       "), held back by " + clocks_.Behind(need) + " (rank " +
                       std::to_string(rank) + " asked)");
}

Status SparseShard::ApplyAsync(int rank, const PsHeader& request, const Buffers& b) {
  const auto r = static_cast<std::size_t>(rank);
  {
    std::lock_guard lock(mu_);
    if (request.clock != clocks_.clock(r)) {
      return Status::Error("a push at clock " + std::to_string(request.clock) +
                           ", but the shard has applied " + std::to_string(clocks_.clock(r)) +
                           " of its pushes");
    }
    const Result<std::uint64_t> staleness =
        clocks_.Staleness(request.clock, request.basis, options_.max_staleness);
    if (!staleness.ok()) return staleness.status();
    table_.Push(b.keys, b.grads.data(), b.global_grads.data(), request.lr);
    ++stats_.pushes_applied;
    stats_.keys_pushed += b.keys.size();
    stats_.keys = table_.size();
    stats_.staleness.Record(staleness.value());
    clocks_.Advance(r);
  }
  changed_.notify_all();
  return Status::Ok();
}

Result<std::uint32_t> SparseShard::GatherSync(int rank, const PsHeader& request, const Buffers& b) {
  std::unique_lock lock(mu_);
  const auto r = static_cast<std::size_t>(rank);
  const std::uint64_t step = clocks_.clock(r);
  if (request.clock != step) {
    return Status::Error("a push of step " + std::to_string(request.clock) + ", but step " +
                         std::to_string(step) + " is being gathered");
  }
  pending_[r] = {.buffers = &b, .rows = request.total_rows, .vote = request.vote, .lr = request.lr};
  clocks_.Advance(r);
  if (clocks_.global() > step) {  // the last push of the step
    ApplySyncStep();
    lock.unlock();
    changed_.notify_all();
    lock.lock();
  } else {
    const bool applied = changed_.wait_until(lock, Clock::now() + options_.timeout,
                                             [&] { return failed_ || clocks_.global() > step; });
    if (failed_)
      return Status::Error("the shard failed while step " + std::to_string(step) + " was gathered");
    if (!applied) {
      return Status::Error("step " + std::to_string(step) + " waited " +
                           std::to_string(options_.timeout.count()) + " ms for the push of " +
                           clocks_.Behind(step + 1));
    }
  }
  return agreed_vote_;  // stays until this worker pushes the next step
}

void SparseShard::ApplySyncStep() {
  const std::size_t width = model_.SlotWidth();
  std::uint64_t total = 0, keys_pushed = 0;
  for (const Pending& p : pending_) total += p.rows;
  step_index_.Clear();
  step_keys_.clear();
  step_grads_.clear();
  step_globals_.assign(model_.GlobalWidth(), 0.0f);
  std::uint32_t vote = kNoVote;
  for (const Pending& p : pending_) {
    vote = std::max(vote, p.vote);
    keys_pushed += p.buffers->keys.size();
    if (p.rows == 0) continue;
    const float weight =
        static_cast<float>(static_cast<double>(p.rows) / static_cast<double>(total));
    const Buffers& b = *p.buffers;
    for (std::size_t i = 0; i < b.keys.size(); ++i) {
      const auto [at, added] = step_index_.Insert(b.keys[i]);
      if (added) {
        step_keys_.push_back(b.keys[i]);
        step_grads_.resize(step_grads_.size() + width, 0.0f);
      }
      float* into = step_grads_.data() + std::size_t{at} * width;
      const float* from = b.grads.data() + i * width;
      for (std::size_t j = 0; j < width; ++j) into[j] += weight * from[j];
    }
    for (std::size_t j = 0; j < step_globals_.size(); ++j) {
      step_globals_[j] += weight * b.global_grads[j];
    }
  }
  if (total > 0) {
    table_.Push(step_keys_, step_grads_.data(), step_globals_.data(), pending_.front().lr);
  }
  const auto workers = static_cast<std::uint64_t>(options_.workers);
  stats_.pushes_applied += workers;
  stats_.keys_pushed += keys_pushed;
  stats_.keys = table_.size();
  stats_.staleness.Record(0, workers);
  agreed_vote_ = vote;
  std::fill(pending_.begin(), pending_.end(), Pending{});
}

Status SparseShard::Serve(std::span<Link* const> links) {
  if (!invalid_.ok()) return invalid_;
  if (links.size() != static_cast<std::size_t>(options_.workers)) {
    return Status::Error(name_ + ": " + std::to_string(links.size()) + " links for " +
                         std::to_string(options_.workers) + " workers");
  }
  {
    std::vector<std::jthread> threads;
    for (std::size_t r = 0; r < links.size(); ++r) {
      threads.emplace_back([this, links, r] {
        Status served = ServeWorker(*links[r], static_cast<int>(r));
        if (!served.ok()) Fail(served, links);
      });
    }
  }
  std::lock_guard lock(mu_);
  return failed_ ? failure_ : Status::Ok();
}

Status SparseShard::ServeWorker(Link& link, int rank) {
  const std::string worker = name_ + ": worker rank " + std::to_string(rank);
  Buffers buffers;
  buffers.header.resize(kPsHeaderFloats);
  buffers.reply.resize(kPsHeaderFloats);
  for (bool goodbye = false; !goodbye;) {
    Result<std::uint32_t> tag = link.RecvAnyTag(buffers.header, Clock::now() + options_.timeout);
    if (!tag.ok()) return Status::Error(worker + ": " + tag.status().message());
    if (Status answered = Answer(link, rank, tag.value(), buffers, &goodbye); !answered.ok()) {
      return Status::Error(worker + ": " + answered.message());
    }
  }
  return Status::Ok();
}

Status SparseShard::Answer(Link& link, int rank, std::uint32_t tag, Buffers& b, bool* goodbye) {
  Result<PsHeader> decoded =
      DecodePsHeader(std::span<const float, kPsHeaderFloats>(b.header.data(), kPsHeaderFloats));
  if (!decoded.ok()) return decoded.status();
  const PsHeader& request = decoded.value();
  if (request.from != static_cast<std::uint32_t>(rank)) {
    return Status::Error("a request from rank " + std::to_string(request.from));
  }
  const Deadline deadline = Clock::now() + options_.timeout;
  const std::size_t width = model_.SlotWidth(), global_width = model_.GlobalWidth();
  PsHeader reply;
  reply.from = static_cast<std::uint32_t>(options_.shard);
  const auto send_header = [&](SparseMessage kind) {
    EncodePsHeader(reply, std::span<float, kPsHeaderFloats>(b.reply.data(), kPsHeaderFloats));
    return link.Send(SparseReplyTag(kind), b.reply, deadline);
  };
  const auto receive = [&](SparseMessage kind, std::vector<float>& into, std::size_t floats) {
    into.resize(floats);
    return link.Recv(SparseDataTag(SparseRequestTag(kind)), into, deadline);
  };
  // The request's keys, read into b.keys.
  const auto receive_keys = [&](SparseMessage kind, std::size_t count) {
    if (Status got = receive(kind, b.wire_keys, count); !got.ok()) return got;
    b.keys.resize(count);
    FloatsToKeys(b.wire_keys, b.keys);
    return Status::Ok();
  };
  const std::size_t count = request.rows;
  if (count > kMaxRequestKeys) {  // before anything is allocated from it
    return Status::Error("a request of " + std::to_string(count) + " keys, more than the " +
                         std::to_string(kMaxRequestKeys) + " one may carry");
  }
  switch (static_cast<SparseMessage>(tag & 0xFF)) {
    case SparseMessage::kHello: {
      if (tag != SparseRequestTag(SparseMessage::kHello)) break;
      reply.shard = static_cast<std::uint32_t>(options_.shard);
      reply.shards = static_cast<std::uint32_t>(options_.shards);
      reply.workers = static_cast<std::uint32_t>(options_.workers);
      reply.mode = static_cast<std::uint32_t>(options_.mode);
      reply.max_staleness = static_cast<std::uint32_t>(options_.max_staleness);
      if (Status sent = send_header(SparseMessage::kHello); !sent.ok()) return sent;
      if (request.shard != reply.shard || request.shards != reply.shards ||
          request.workers != reply.workers || request.mode != reply.mode ||
          request.max_staleness != reply.max_staleness) {
        return Status::Error("hello: the worker expects shard " + std::to_string(request.shard) +
                             " of " + std::to_string(request.shards) + " serving " +
                             std::to_string(request.workers) + " workers in mode " +
                             std::string(PsModeName(static_cast<PsMode>(request.mode & 1))) +
                             ", max_staleness " + std::to_string(request.max_staleness));
      }
      return Status::Ok();
    }
    case SparseMessage::kPull: {
      if (tag != SparseRequestTag(SparseMessage::kPull)) break;
      if (Status got = receive_keys(SparseMessage::kPull, count); !got.ok()) return got;
      b.slots.assign(count * width, 0.0f);
      const bool lookup = (request.flags & kSparseLookupOnly) != 0;
      {
        std::unique_lock lock(mu_);
        if (!lookup && options_.mode == PsMode::kAsync) {
          if (Status waited = AwaitClock(lock, rank, request.clock); !waited.ok()) return waited;
        }
        if (lookup) {
          for (std::size_t i = 0; i < count; ++i) {
            if (const float* slot = table_.Find(b.keys[i])) {
              std::copy_n(slot, width, b.slots.begin() + static_cast<std::ptrdiff_t>(i * width));
            }
          }
        } else {
          table_.Pull(b.keys, b.slots.data());
        }
        b.globals.assign(table_.globals(), table_.globals() + global_width);
        stats_.keys = table_.size();
        stats_.keys_pulled += count;
        reply.basis = table_.size();
        reply.clock = clocks_.global();
      }
      reply.rows = static_cast<std::uint32_t>(count);
      if (Status sent = send_header(SparseMessage::kPull); !sent.ok()) return sent;
      const std::uint32_t data = SparseDataTag(SparseReplyTag(SparseMessage::kPull));
      if (Status sent = link.Send(data, b.slots, deadline); !sent.ok()) return sent;
      return link.Send(data, b.globals, deadline);
    }
    case SparseMessage::kPush: {
      if (tag != SparseRequestTag(SparseMessage::kPush)) break;
      if (Status got = receive_keys(SparseMessage::kPush, count); !got.ok()) return got;
      if (Status got = receive(SparseMessage::kPush, b.grads, count * width); !got.ok()) {
        return got;
      }
      if ((request.flags & kSparseWithGlobals) != 0) {
        if (Status got = receive(SparseMessage::kPush, b.global_grads, global_width); !got.ok()) {
          return got;
        }
      } else {
        b.global_grads.assign(global_width, 0.0f);  // a step of 0: no change (lazy optimizers)
      }
      if (options_.mode == PsMode::kAsync) return ApplyAsync(rank, request, b);
      Result<std::uint32_t> agreed = GatherSync(rank, request, b);
      if (!agreed.ok()) return agreed.status();
      reply.clock = request.clock;
      reply.vote = agreed.value();
      return send_header(SparseMessage::kPush);
    }
    case SparseMessage::kSnapshot: {
      if (tag != SparseRequestTag(SparseMessage::kSnapshot)) break;
      sparse::KeyTableState state;
      {
        std::lock_guard lock(mu_);
        state = table_.Snapshot();
        reply.steps = stats_.pushes_applied;
      }
      reply.rows = static_cast<std::uint32_t>(state.keys.size());
      reply.state_vectors = static_cast<std::uint32_t>(state.state.size());
      if (Status sent = send_header(SparseMessage::kSnapshot); !sent.ok()) return sent;
      const std::uint32_t data = SparseDataTag(SparseReplyTag(SparseMessage::kSnapshot));
      b.wire_keys.resize(state.keys.size());
      KeysToFloats(state.keys, b.wire_keys);
      for (const std::vector<float>* v : {&b.wire_keys, &state.slots}) {
        if (Status sent = link.Send(data, *v, deadline); !sent.ok()) return sent;
      }
      for (const std::vector<float>& v : state.state) {
        if (Status sent = link.Send(data, v, deadline); !sent.ok()) return sent;
      }
      return link.Send(data, state.globals, deadline);
    }
    case SparseMessage::kGoodbye:
      if (tag != SparseRequestTag(SparseMessage::kGoodbye)) break;
      *goodbye = true;
      if (Status left = Depart(rank); !left.ok()) return left;
      return send_header(SparseMessage::kGoodbye);
  }
  return Status::Error("a message tagged " + std::to_string(tag) + ", which is no sparse request");
}

}  // namespace dtrain::dist
