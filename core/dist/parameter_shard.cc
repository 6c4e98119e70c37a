#include "core/dist/parameter_shard.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <thread>
#include <utility>

#include "core/dist/float_slots.h"
#include "core/dist/shard_ranges.h"
#include "core/math/elementwise.h"

namespace dtrain::dist {
namespace {

std::string ShardName(const ShardOptions& o) {
  return "shard " + std::to_string(o.shard) + " of " + std::to_string(o.shards) + " " +
         FormatRange(o.begin, o.end);
}

std::string FloatText(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

Status CheckOptions(const ShardOptions& o) {
  if (o.shards < 1 || o.shard < 0 || o.shard >= o.shards) {
    return Status::Error("shard index " + std::to_string(o.shard) + " is not in [0, " +
                         std::to_string(o.shards) + ")");
  }
  if (o.workers < 1) {
    return Status::Error("a shard needs at least one worker, not " + std::to_string(o.workers));
  }
  if (o.max_staleness < 0) {
    return Status::Error("max_staleness must be >= 0, not " + std::to_string(o.max_staleness));
  }
  const ShardRange want = ShardRanges(o.num_params, o.shards)[static_cast<std::size_t>(o.shard)];
  if (o.begin != want.begin || o.end != want.end) {
    return Status::Error("range " + FormatRange(o.begin, o.end) + " is not shard " +
                         std::to_string(o.shard) + "'s range " + FormatRange(want.begin, want.end) +
                         " of " + std::to_string(o.num_params) + " parameters in " +
                         std::to_string(o.shards) + " shards");
  }
  if (o.timeout.count() <= 0) return Status::Error("the timeout must be positive");
  if (o.backup_workers < 0 || o.backup_workers >= o.workers) {
    return Status::Error("backup_workers must be in [0, " + std::to_string(o.workers) +
                         ") (the workers), not " + std::to_string(o.backup_workers));
  }
  if (o.backup_workers > 0 && (o.mode != PsMode::kSync || o.shards != 1 || o.workers > 64)) {
    return Status::Error("backup workers need sync mode, one shard and at most 64 workers");
  }
  if (o.elastic && o.mode != PsMode::kSync) {
    return Status::Error("elastic memberships need sync mode");
  }
  return optim::ValidateOptimizerOptions(o.optimizer);
}

}  // namespace

ParameterShard::ParameterShard(ShardOptions options)
    : options_(std::move(options)), name_(ShardName(options_)), invalid_(CheckOptions(options_)) {
  if (!invalid_.ok()) {
    invalid_ = Status::Error(name_ + ": invalid options: " + invalid_.message());
    return;
  }
  optimizer_ = optim::MakeOptimizer(options_.optimizer, options_.begin, options_.end);
  params_.assign(options_.end - options_.begin, 0.0f);
  clocks_ = WorkerClocks(static_cast<std::size_t>(options_.workers));
  absent_since_.assign(static_cast<std::size_t>(options_.workers), Clock::time_point{});
  may_jump_.assign(static_cast<std::size_t>(options_.workers), false);
}

ParameterShard::~ParameterShard() = default;

Status ParameterShard::Load(std::span<const float> params,
                            std::span<const std::span<const float>> optimizer_state,
                            std::uint64_t steps) {
  if (!invalid_.ok()) return invalid_;
  if (params.size() != params_.size()) {
    return Status::Error(name_ + ": loading " + std::to_string(params.size()) +
                         " parameters into a range of " + std::to_string(params_.size()));
  }
  std::vector<std::span<float>> state = optimizer_->StateVectors();
  if (!optimizer_state.empty() && optimizer_state.size() != state.size()) {
    return Status::Error(name_ + ": loading " + std::to_string(optimizer_state.size()) +
                         " optimizer state vectors into a " +
                         std::string(optim::OptimizerTypeName(optimizer_->type())) +
                         " optimizer, which has " + std::to_string(state.size()));
  }
  for (std::size_t i = 0; i < optimizer_state.size(); ++i) {
    if (optimizer_state[i].size() != state[i].size()) {
      return Status::Error(name_ + ": optimizer state vector " + std::to_string(i) + " has " +
                           std::to_string(optimizer_state[i].size()) + " floats, not " +
                           std::to_string(state[i].size()));
    }
  }
  std::copy(params.begin(), params.end(), params_.begin());
  for (std::size_t i = 0; i < optimizer_state.size(); ++i) {
    std::copy(optimizer_state[i].begin(), optimizer_state[i].end(), state[i].begin());
  }
  optimizer_->set_steps(steps);
  std::lock_guard lock(mu_);
  stats_.steps = steps;
  return Status::Ok();
}

Status ParameterShard::LoadClocks(std::span<const std::uint64_t> clocks) {
  if (!invalid_.ok()) return invalid_;
  if (clocks.size() != static_cast<std::size_t>(options_.workers)) {
    return Status::Error(name_ + ": loading " + std::to_string(clocks.size()) +
                         " worker clocks for " + std::to_string(options_.workers) + " workers");
  }
  std::lock_guard lock(mu_);
  loaded_clocks_.assign(clocks.begin(), clocks.end());
  return Status::Ok();
}

ShardStats ParameterShard::Stats() const {
  std::lock_guard lock(mu_);
  ShardStats s = stats_;
  s.global_clock = clocks_.global();
  return s;
}

Status ParameterShard::Serve(std::span<Link* const> links) {
  Status served = invalid_;
  if (served.ok() && options_.elastic) return ServeElastic(links);
  if (served.ok() && links.size() != static_cast<std::size_t>(options_.workers)) {
    served = Status::Error(name_ + ": " + std::to_string(links.size()) + " links for " +
                           std::to_string(options_.workers) + " workers");
  }
  for (std::size_t r = 0; served.ok() && r < links.size(); ++r) {
    if (links[r] == nullptr) {
      served = Status::Error(name_ + ": no link to worker rank " + std::to_string(r));
    }
  }
  if (served.ok()) {
    if (options_.mode == PsMode::kAsync) {
      served = ServeAsync(links);
    } else {
      served = options_.backup_workers > 0 ? ServeBackups(links) : ServeSync(links);
    }
  }
  if (!served.ok()) {
    // The workers learn at once that this shard is gone, instead of at their deadlines.
    for (Link* link : links) {
      if (link != nullptr) link->Close();
    }
  }
  return served;
}

Status ParameterShard::Fail(const std::string& context, const Status& status) const {
  return Status::Error(name_ + ": " + context + ": " + status.message());
}

Status ParameterShard::Unexpected(int rank, std::uint32_t tag, const std::string& context) const {
  return Status::Error(name_ + ": " + context + ": " + Worker(rank) + " sent a " + PsTagName(tag) +
                       " message, which the shard does not expect now");
}

Result<std::pair<std::uint32_t, PsHeader>> ParameterShard::ReceiveRequest(
    Link& link, int rank, const std::string& waiting_for, bool* link_broke) {
  std::array<float, kPsHeaderFloats> raw;
  Result<std::uint32_t> tag = link.RecvAnyTag(raw, Clock::now() + options_.timeout);
  if (!tag.ok()) {
    if (link_broke != nullptr) *link_broke = true;
    return Fail(waiting_for, tag.status());
  }
  const std::uint32_t t = tag.value();
  const bool request = (t & ~std::uint32_t{0x7F}) == kPsTagBase && (t & 0x7F) >= 1 &&
                       (t & 0x7F) <= static_cast<std::uint32_t>(kPsLastMessage);
  if (!request) return Unexpected(rank, t, waiting_for);
  Result<PsHeader> h = DecodePsHeader(raw);
  if (!h.ok()) return Fail(waiting_for + ": from " + Worker(rank), h.status());
  if (rank >= 0 && h.value().from != static_cast<std::uint32_t>(rank)) {
    return Status::Error(name_ + ": " + waiting_for + ": the link of " + Worker(rank) +
                         " carried a " + PsTagName(t) + " from worker rank " +
                         std::to_string(h.value().from));
  }
  return std::pair{t, h.value()};
}

Status ParameterShard::SendReply(Link& link, int rank, PsMessage kind, const PsHeader& header,
                                 std::span<const std::span<const float>> data,
                                 const std::string& context) {
  std::array<float, kPsHeaderFloats> raw;
  EncodePsHeader(header, raw);
  const std::uint32_t tag = PsReplyTag(kind);
  const Deadline deadline = Clock::now() + options_.timeout;
  Status sent = link.Send(tag, raw, deadline);
  for (std::size_t i = 0; sent.ok() && i < data.size(); ++i) {
    sent = link.Send(PsDataTag(tag), data[i], deadline);
  }
  if (!sent.ok()) {
    return Fail((context.empty() ? "" : context + ": ") + "sending a " + PsTagName(tag) + " to " +
                    Worker(rank),
                sent);
  }
  return Status::Ok();
}

PsHeader ParameterShard::OwnHello(const PsHeader& hello, std::uint64_t clock, std::uint64_t steps,
                                  std::uint64_t own_clock, const PsHeader* membership) const {
  PsHeader reply;
  reply.from = static_cast<std::uint32_t>(options_.shard);
  reply.clock = clock;
  reply.basis = own_clock;
  reply.num_params = options_.num_params;
  reply.begin = options_.begin;
  reply.end = options_.end;
  reply.steps = steps;
  reply.shard = static_cast<std::uint32_t>(options_.shard);
  reply.shards = static_cast<std::uint32_t>(options_.shards);
  reply.workers = static_cast<std::uint32_t>(options_.workers);
  reply.mode = static_cast<std::uint32_t>(options_.mode);
  // Slot 22: async, the staleness bound; sync, the backup workers (an elastic membership's own).
  reply.max_staleness =
      membership != nullptr
          ? membership->max_staleness
          : static_cast<std::uint32_t>(options_.mode == PsMode::kAsync ? options_.max_staleness
                                                                       : options_.backup_workers);
  reply.flags = hello.flags & kPsWantParams;
  if (membership != nullptr) {
    reply.membership = membership->membership;
    reply.position = membership->position;
    reply.members = membership->members;
  }
  return reply;
}

std::string ParameterShard::HelloMismatch(const PsHeader& hello, const PsHeader& reply) const {
  std::string mismatch;
  const auto differ = [&](const char* what, std::uint64_t theirs, std::uint64_t ours) {
    if (theirs != ours && mismatch.empty()) {
      mismatch = std::string(what) + " " + std::to_string(theirs) + " where the shard has " +
                 std::to_string(ours);
    }
  };
  differ("shards", hello.shards, reply.shards);
  differ("shard index", hello.shard, reply.shard);
  differ("parameter count", hello.num_params, reply.num_params);
  differ("range begin", hello.begin, reply.begin);
  differ("range end", hello.end, reply.end);
  differ("workers", hello.workers, reply.workers);
  if (hello.mode != reply.mode && mismatch.empty()) {
    mismatch = "mode " + std::string(PsModeName(static_cast<PsMode>(hello.mode & 1))) +
               " where the shard has " + std::string(PsModeName(options_.mode));
  }
  differ(options_.mode == PsMode::kAsync ? "max_staleness" : "backup_workers", hello.max_staleness,
         reply.max_staleness);
  differ("membership epoch", hello.membership, reply.membership);
  differ("position", hello.position, reply.position);
  differ("members", hello.members, reply.members);
  // Elastic: a member stands at the steps the shard applied (hello: its completed steps; reply: g).
  if (options_.elastic) differ("completed step", hello.clock, reply.clock);
  return mismatch;
}

Status ParameterShard::AnswerHello(Link& link, int rank, const PsHeader& hello, PushDecoder& pushes,
                                   std::span<const float> params, std::uint64_t clock,
                                   std::uint64_t steps, std::uint64_t own_clock,
                                   const PsHeader* membership) {
  Result<PushDecoder> decoder = PushDecoder::FromHello(hello, params.size());
  if (!decoder.ok()) return Fail(Worker(rank) + "'s hello", decoder.status());
  pushes = std::move(decoder).value();
  PsHeader reply = OwnHello(hello, clock, steps, own_clock, membership);
  pushes.Echo(reply);
  const std::span<const float> parts[] = {params};
  const std::span<const std::span<const float>> data =
      reply.flags & kPsWantParams ? std::span(parts) : std::span<const std::span<const float>>();
  // Answer even a mismatched hello with this shard's view, so the worker can say what differs.
  Status sent = SendReply(link, rank, PsMessage::kHello, reply, data);
  if (const std::string mismatch = HelloMismatch(hello, reply); !mismatch.empty()) {
    return Status::Error(name_ + ": " + Worker(rank) + " said hello with " + mismatch);
  }
  return sent;
}

Status ParameterShard::AnswerSnapshot(Link& link, int rank, std::span<const float> params,
                                      std::span<const std::span<const float>> state,
                                      std::uint64_t steps, std::uint64_t clock,
                                      std::span<const std::uint64_t> clocks) {
  PsHeader reply;
  reply.from = static_cast<std::uint32_t>(options_.shard);
  reply.clock = clock;
  reply.steps = steps;
  reply.begin = options_.begin;
  reply.end = options_.end;
  reply.workers = static_cast<std::uint32_t>(clocks.size());
  reply.mode = static_cast<std::uint32_t>(options_.mode);
  reply.state_vectors = static_cast<std::uint32_t>(state.size());
  // The version vector: each clock as two u32 bit patterns, low word first.
  std::vector<float> version(2 * clocks.size());
  for (std::size_t w = 0; w < clocks.size(); ++w) PutU64(version, 2 * w, clocks[w]);
  std::vector<std::span<const float>> data;
  data.reserve(state.size() + 2);
  data.push_back(params);
  for (std::span<const float> s : state) data.push_back(s);
  data.push_back(version);
  return SendReply(link, rank, PsMessage::kSnapshot, reply, data);
}

// ---- Sync -----------------------------------------------------------------------------------

Status ParameterShard::ServeSync(std::span<Link* const> links) {
  const auto workers = static_cast<std::size_t>(options_.workers);
  const std::size_t size = params_.size();
  math::FloatBuffer sum(size), scratch(size);
  // Per worker, once it said hello: how its compressed pushes come.
  std::vector<std::optional<PushDecoder>> greeted(workers);
  ResidualDeposits deposits(workers, size);  // the residuals of a checkpoint, while collected
  std::optional<std::uint64_t> step;         // the step the next push must carry (set by the first)
  std::uint64_t steps_done = optimizer_->steps();  // the global clock: Load's steps, then +1 each
  // The version vector of snapshots: every worker has pushed every step, so all equal g.
  std::vector<std::uint64_t> pushes(workers, steps_done);
  {
    std::lock_guard lock(mu_);
    clocks_.SetGlobal(steps_done);
  }

  for (;;) {
    std::vector<std::uint32_t> votes(workers, kNoVote);
    std::uint32_t checkpoint = 0;       // kPsCheckpoint once a worker proposed one
    std::optional<int> pusher, leaver;  // the first worker that pushed / said goodbye
    float lr = 0.0f;
    std::uint32_t total_rows = 0;
    for (std::size_t r = 0; r < workers; ++r) {
      const int rank = static_cast<int>(r);
      Link& link = *links[r];
      bool done = false;  // this worker's push or goodbye of this round has arrived
      while (!done) {
        // The first push of a run sets the step; until then it is unknown.
        const std::string at = step ? "step " + std::to_string(*step) : "the first step";
        Result<std::pair<std::uint32_t, PsHeader>> request =
            ReceiveRequest(link, rank, at + ": waiting for " + Worker(rank) + "'s push");
        if (!request.ok()) return request.status();
        const auto [tag, h] = request.value();
        const auto kind = static_cast<PsMessage>(tag & 0x7F);
        if (!greeted[r] && kind != PsMessage::kHello) {
          return Unexpected(rank, tag, at + ": before its hello");
        }
        switch (kind) {
          case PsMessage::kHello: {
            if (greeted[r]) return Unexpected(rank, tag, at + ": a second hello");
            Status s = AnswerHello(link, rank, h, greeted[r].emplace(), params_, steps_done,
                                   optimizer_->steps());
            if (!s.ok()) return s;
            break;
          }
          case PsMessage::kFetch: {
            PsHeader reply;
            reply.from = static_cast<std::uint32_t>(options_.shard);
            reply.clock = steps_done;
            reply.basis = stats_.pushes_applied;
            const std::span<const float> parts[] = {params_};
            Status s = SendReply(link, rank, PsMessage::kFetch, reply, parts);
            if (!s.ok()) return s;
            break;
          }
          case PsMessage::kSnapshot: {
            std::vector<std::span<float>> state = optimizer_->StateVectors();
            std::vector<std::span<const float>> state_view(state.begin(), state.end());
            Status s = AnswerSnapshot(link, rank, params_, state_view, optimizer_->steps(),
                                      steps_done, pushes);
            if (!s.ok()) return s;
            break;
          }
          case PsMessage::kGoodbye: {
            if (pusher) {
              return Status::Error(name_ + ": " + at + ": " + Worker(rank) +
                                   " said goodbye while " + Worker(*pusher) + " pushed " + at);
            }
            if (!leaver) leaver = rank;
            PsHeader reply;
            reply.from = static_cast<std::uint32_t>(options_.shard);
            reply.clock = pushes[r];
            Status s = SendReply(link, rank, PsMessage::kGoodbye, reply, {});
            if (!s.ok()) return s;
            done = true;
            break;
          }
          case PsMessage::kPush: {
            if (leaver) {
              return Status::Error(name_ + ": " + Worker(rank) + " pushed step " +
                                   std::to_string(h.clock) + " after " + Worker(*leaver) +
                                   " said goodbye");
            }
            if (!step) step = h.clock;
            if (h.clock != *step) {
              return Status::Error(name_ + ": " + Worker(rank) + " pushed step " +
                                   std::to_string(h.clock) + " where the shard expected step " +
                                   std::to_string(*step));
            }
            const std::string what = "step " + std::to_string(*step) + ": " + Worker(rank);
            if (!pusher) {
              pusher = rank;
              lr = h.lr;
              total_rows = h.total_rows;
            } else if (std::bit_cast<std::uint32_t>(h.lr) != std::bit_cast<std::uint32_t>(lr)) {
              return Status::Error(name_ + ": " + what + " pushed with lr " + FloatText(h.lr) +
                                   " where " + Worker(*pusher) + " pushed with lr " +
                                   FloatText(lr));
            } else if (h.total_rows != total_rows) {
              return Status::Error(name_ + ": " + what + " says the step has " +
                                   std::to_string(h.total_rows) + " rows where " + Worker(*pusher) +
                                   " says " + std::to_string(total_rows));
            }
            Status got = greeted[r]->Receive(link, PsDataTag(tag), h, scratch,
                                             Clock::now() + options_.timeout);
            if (!got.ok()) return Fail(what + "'s push", got);
            // Each push weighted by its share of the step's rows, summed in rank order.
            const float weight = total_rows > 0
                                     ? static_cast<float>(static_cast<double>(h.rows) / total_rows)
                                     : static_cast<float>(1.0 / static_cast<double>(workers));
            if (*pusher == rank) {
              math::ScaleInto(weight, scratch, sum);
            } else {
              math::Axpy(weight, scratch, sum);
            }
            votes[r] = h.vote;
            checkpoint |= h.flags & kPsCheckpoint;
            done = true;
            break;
          }
          case PsMessage::kResidual: {
            // Rank 0's comes first (the shard reads link 0 first); the others' follow it.
            if (rank != 0) return Unexpected(rank, tag, at + ": before worker rank 0's residual");
            Status s = CollectResiduals(links, greeted, h, step, scratch, deposits);
            if (!s.ok()) return s;
            break;
          }
        }
      }
    }
    if (leaver) return Status::Ok();  // every worker said goodbye (a push would have failed)

    optimizer_->Step(params_, sum, lr);
    ++steps_done;
    std::fill(pushes.begin(), pushes.end(), steps_done);
    {
      std::lock_guard lock(mu_);
      stats_.steps = optimizer_->steps();
      stats_.pushes_applied += workers;
      clocks_.SetGlobal(steps_done);
      stats_.staleness.Record(0, workers);
    }
    PsHeader reply;
    reply.from = static_cast<std::uint32_t>(options_.shard);
    reply.clock = *step;
    reply.vote = *std::max_element(votes.begin(), votes.end());
    reply.flags = checkpoint;
    const std::span<const float> parts[] = {params_};
    for (std::size_t r = 0; r < workers; ++r) {
      Status s = SendReply(*links[r], static_cast<int>(r), PsMessage::kPush, reply, parts,
                           "step " + std::to_string(*step));
      if (!s.ok()) return s;
    }
    ++*step;
  }
}

// ---- Async ----------------------------------------------------------------------------------

void ParameterShard::FailServe(const Status& status) {
  {
    std::lock_guard lock(mu_);
    if (failed_) return;
    failed_ = true;
    failure_ = status;
    changed_.notify_all();
  }
  for (Link* link : links_) link->Close();
}

void ParameterShard::StartWorkerThread(int rank, Link* link) {
  links_.push_back(link);
  threads_.emplace_back([this, rank, link] {
    Status s = ServeAsyncWorker(*link, rank);
    if (!s.ok()) FailServe(s);
  });
}

Status ParameterShard::ServeAsync(std::span<Link* const> links) {
  {
    std::lock_guard lock(mu_);
    failed_ = false;
    failure_ = Status::Ok();
    links_.clear();
    // Clocks go on from the checkpoint's version vector (LoadClocks), else from 0.
    if (loaded_clocks_.empty()) {
      clocks_.Start(std::vector<std::uint64_t>(static_cast<std::size_t>(options_.workers), 0));
    } else {
      clocks_.Start(loaded_clocks_);
    }
    std::fill(may_jump_.begin(), may_jump_.end(), false);
    serving_ = true;
    for (std::size_t r = 0; r < links.size(); ++r) StartWorkerThread(static_cast<int>(r), links[r]);
  }
  {
    // Until every worker has said goodbye, or the first failure; an absent worker that does not
    // come back in time is one.
    std::unique_lock lock(mu_);
    for (;;) {
      if (failed_ || clocks_.AllDeparted()) {
        break;
      }
      // The absent worker whose time to come back ends first, if any.
      std::optional<std::size_t> first;
      for (std::size_t w = 0; w < absent_since_.size(); ++w) {
        if (clocks_.absent(w) && (!first || absent_since_[w] < absent_since_[*first])) first = w;
      }
      if (!first) {
        changed_.wait(lock);  // every change of the above notifies
        continue;
      }
      const Clock::time_point due = absent_since_[*first] + options_.timeout;
      if (Clock::now() < due) {
        changed_.wait_until(lock, due);
        continue;
      }
      const std::string overdue =
          Worker(static_cast<int>(*first)) + " left without a goodbye at clock " +
          std::to_string(clocks_.clock(*first)) + " and did not come back within " +
          std::to_string(options_.timeout.count()) + " ms";
      lock.unlock();
      FailServe(Status::Error(name_ + ": " + overdue));
      lock.lock();
    }
    serving_ = false;  // no Rejoin from now
  }
  std::vector<std::jthread> threads;
  {
    std::lock_guard lock(mu_);
    threads.swap(threads_);
  }
  threads.clear();  // joins them: every link is closed or its worker has said goodbye
  std::lock_guard lock(mu_);
  links_.clear();
  return failed_ ? failure_ : Status::Ok();
}

Status ParameterShard::Rejoin(int rank, Link* link) {
  std::lock_guard lock(mu_);
  if (!serving_ || failed_ || !options_.rejoin || link == nullptr) {
    return Status::Error(name_ + ": not taking workers back now");
  }
  if (rank < 0 || rank >= options_.workers || !clocks_.absent(static_cast<std::size_t>(rank))) {
    return Status::Error(name_ + ": " + Worker(rank) + " is not absent");
  }
  const auto r = static_cast<std::size_t>(rank);
  clocks_.SetClock(r, std::max(clocks_.clock(r), clocks_.global()));  // g never decreases
  clocks_.SetAbsent(r, false);
  StartWorkerThread(rank, link);
  changed_.notify_all();
  return Status::Ok();
}

Status ParameterShard::LinkBroke(int rank, Link& link, Status why) {
  if (!options_.rejoin) return why;
  std::lock_guard lock(mu_);
  if (failed_) return Status::Ok();  // closed because of another failure: not the cause
  const auto r = static_cast<std::size_t>(rank);
  clocks_.SetAbsent(r, true);
  absent_since_[r] = Clock::now();
  changed_.notify_all();
  link.Close();
  return Status::Ok();
}

Status ParameterShard::ServeAsyncWorker(Link& link, int rank) {
  const auto r = static_cast<std::size_t>(rank);
  const std::size_t size = params_.size();
  math::FloatBuffer scratch(size), reply_params(size);
  PushDecoder decoder;  // how this worker's compressed pushes come
  bool greeted = false;
  for (;;) {
    // Only this thread writes worker r's clock, so it may read it without the lock.
    const std::string at = Worker(rank) + " at clock " + std::to_string(clocks_.clock(r));
    bool broke = false;
    Result<std::pair<std::uint32_t, PsHeader>> request =
        ReceiveRequest(link, rank, at + ": waiting for its next message", &broke);
    if (!request.ok()) {
      if (broke) return LinkBroke(rank, link, request.status());
      std::lock_guard lock(mu_);
      if (failed_) return Status::Ok();  // closed because another worker failed: not the cause
      return request.status();
    }
    const auto [tag, h] = request.value();
    const auto kind = static_cast<PsMessage>(tag & 0x7F);
    if (!greeted && kind != PsMessage::kHello) return Unexpected(rank, tag, at + ": before hello");
    switch (kind) {
      case PsMessage::kHello: {
        if (greeted) return Unexpected(rank, tag, at + ": a second hello");
        greeted = true;
        std::uint64_t g, steps, own;
        {
          std::lock_guard lock(mu_);
          std::copy(params_.begin(), params_.end(), reply_params.begin());
          g = clocks_.global();
          steps = optimizer_->steps();
          own = clocks_.clock(r);
          may_jump_[r] = true;
        }
        Status s = AnswerHello(link, rank, h, decoder, reply_params, g, steps, own);
        if (!s.ok()) return s;
        break;
      }
      case PsMessage::kPush: {
        // After a hello the worker may start from a larger clock: the largest any shard gave it.
        const bool jump = may_jump_[r] && h.clock > clocks_.clock(r);
        if (h.clock != clocks_.clock(r) && !jump) {
          return Status::Error(name_ + ": " + Worker(rank) + " pushed clock " +
                               std::to_string(h.clock) + " where the shard expected clock " +
                               std::to_string(clocks_.clock(r)) + " (the pushes it has applied)");
        }
        Status got =
            decoder.Receive(link, PsDataTag(tag), h, scratch, Clock::now() + options_.timeout);
        if (!got.ok()) return LinkBroke(rank, link, Fail(at + "'s push", got));
        std::lock_guard lock(mu_);
        if (failed_) return Status::Ok();
        may_jump_[r] = false;
        if (jump) clocks_.SetClock(r, h.clock);
        const Result<std::uint64_t> staleness =
            clocks_.Staleness(h.clock, h.basis, options_.max_staleness);
        if (!staleness.ok()) {
          return Status::Error(name_ + ": " + at + ": " + staleness.status().message());
        }
        optimizer_->Step(params_, scratch, h.lr);
        clocks_.Advance(r);
        ++stats_.pushes_applied;
        stats_.steps = optimizer_->steps();
        stats_.staleness.Record(staleness.value());
        changed_.notify_all();
        break;
      }
      case PsMessage::kFetch: {
        PsHeader reply;
        reply.from = static_cast<std::uint32_t>(options_.shard);
        {
          std::unique_lock lock(mu_);
          const Deadline deadline = Clock::now() + options_.timeout;
          // The clock named, not the structured binding h: clang 14 cannot capture a binding.
          const std::uint64_t needed = h.clock;
          const bool ready = changed_.wait_until(
              lock, deadline, [&] { return failed_ || clocks_.global() >= needed; });
          if (failed_) return Status::Ok();
          if (!ready) {
            return Status::Error(
                name_ + ": " + at + " fetched needing global clock >= " + std::to_string(h.clock) +
                " (max_staleness " + std::to_string(options_.max_staleness) + "), but after " +
                std::to_string(options_.timeout.count()) + " ms it is " +
                std::to_string(clocks_.global()) + ", held back by " + clocks_.Behind(h.clock));
          }
          std::copy(params_.begin(), params_.end(), reply_params.begin());
          reply.clock = clocks_.global();
          reply.basis = stats_.pushes_applied;
        }
        const std::span<const float> parts[] = {reply_params};
        Status s = SendReply(link, rank, PsMessage::kFetch, reply, parts);
        if (!s.ok()) return LinkBroke(rank, link, s);
        break;
      }
      case PsMessage::kSnapshot: {
        std::vector<math::FloatBuffer> state;
        std::vector<std::uint64_t> clocks;
        std::uint64_t steps, g;
        {
          std::lock_guard lock(mu_);
          std::copy(params_.begin(), params_.end(), reply_params.begin());
          for (std::span<float> v : optimizer_->StateVectors())
            state.emplace_back(v.begin(), v.end());
          clocks = clocks_.clocks();
          steps = optimizer_->steps();
          g = clocks_.global();
        }
        std::vector<std::span<const float>> state_view(state.begin(), state.end());
        Status s = AnswerSnapshot(link, rank, reply_params, state_view, steps, g, clocks);
        if (!s.ok()) return LinkBroke(rank, link, s);
        break;
      }
      case PsMessage::kResidual:  // checkpoints of compressed sync jobs only
        return Unexpected(rank, tag, at + ": a residual in async mode");
      case PsMessage::kGoodbye: {
        if (h.clock != clocks_.clock(r)) {
          return Status::Error(name_ + ": " + Worker(rank) + " said goodbye after " +
                               std::to_string(h.clock) + " pushes, but the shard applied " +
                               std::to_string(clocks_.clock(r)));
        }
        {
          std::lock_guard lock(mu_);
          clocks_.Depart(r);
          changed_.notify_all();
        }
        PsHeader reply;
        reply.from = static_cast<std::uint32_t>(options_.shard);
        reply.clock = clocks_.clock(r);
        return SendReply(link, rank, PsMessage::kGoodbye, reply, {});
      }
    }
  }
}

}  // namespace dtrain::dist
