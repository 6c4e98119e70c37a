#include "core/dist/ps_client.h"

#include <algorithm>
#include <array>
#include <limits>
#include <utility>

#include "core/dist/float_slots.h"
#include "core/dist/push_codec.h"

namespace dtrain::dist {
namespace {

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Runs `done(start)` when the call it times returns, however it returns.
template <typename Done>
class CallTimer {
 public:
  explicit CallTimer(Done done) : start_(Clock::now()), done_(std::move(done)) {}
  ~CallTimer() { done_(start_); }
  CallTimer(const CallTimer&) = delete;
  CallTimer& operator=(const CallTimer&) = delete;

 private:
  Clock::time_point start_;
  Done done_;
};

}  // namespace

PsClient::PsClient(std::span<Link* const> shard_links, PsClientOptions options)
    : links_(shard_links.begin(), shard_links.end()), options_(std::move(options)) {
  const std::string me = "worker rank " + std::to_string(options_.rank);
  if (links_.empty()) {
    unusable_ = Status::Error(me + ": no parameter-server shards to talk to");
  } else if (options_.workers < 1 || options_.rank < 0 || options_.rank >= Members()) {
    unusable_ = Status::Error(me + ": rank is not in [0, " + std::to_string(Members()) + ")");
  } else if (options_.max_staleness < 0) {
    unusable_ = Status::Error(me + ": max_staleness must be >= 0, not " +
                              std::to_string(options_.max_staleness));
  } else if (options_.timeout.count() <= 0) {
    unusable_ = Status::Error(me + ": the timeout must be positive");
  } else if (std::find(links_.begin(), links_.end(), nullptr) != links_.end()) {
    unusable_ = Status::Error(me + ": a shard's link is missing");
  } else if (options_.backup_workers < 0 || options_.backup_workers >= Members()) {
    unusable_ = Status::Error(me + ": backup_workers must be in [0, " + std::to_string(Members()) +
                              "), not " + std::to_string(options_.backup_workers));
  } else if (options_.backup_workers > 0 &&
             (options_.mode != PsMode::kSync || links_.size() != 1 ||
              options_.compression.method != compress::Method::kNone)) {
    unusable_ = Status::Error(me + ": backup workers need sync mode, one shard and raw pushes");
  }
  ranges_ = ShardRanges(options_.num_params, static_cast<int>(links_.size()));
  const compress::Settings& compression = options_.compression;
  if (compression.method == compress::Method::kPowerSgd) {
    unusable_ = Status::Error(me + ": compression \"powersgd\" does not apply to pushes");
  } else if (compression.method != compress::Method::kNone && unusable_.ok()) {
    compressor_ = std::make_unique<compress::GradientCompressor>(PlanPushes(ranges_, compression),
                                                                 compression, /*seed=*/0);
    encoded_.resize(compress::PlanSentFloats(compressor_->plan()));
  }
}

std::string PsClient::Shard(int k) const {
  const ShardRange& r = ranges_[static_cast<std::size_t>(k)];
  return "shard " + std::to_string(k) + " of " + std::to_string(shards()) + " " +
         FormatRange(r.begin, r.end);
}

Status PsClient::Error(int k, const std::string& context, const Status& status) const {
  return Status::Error("worker rank " + std::to_string(options_.rank) + ": " + Shard(k) + ": " +
                       context + ": " + status.message());
}

Status PsClient::Usable() const { return unusable_; }

int PsClient::StalenessOrBackups() const {
  return options_.mode == PsMode::kAsync ? options_.max_staleness : options_.backup_workers;
}

Status PsClient::Broken(Status status) {
  if (unusable_.ok()) {
    unusable_ = Status::Error("worker rank " + std::to_string(options_.rank) +
                              ": the parameter-server links are unusable after an earlier "
                              "failure: " +
                              status.message());
  }
  return status;
}

void PsClient::AddTime(Clock::time_point start) {
  std::lock_guard lock(stats_mu_);
  stats_.comm_seconds += Seconds(Clock::now() - start);
}

train::CommStats PsClient::Stats() const {
  std::lock_guard lock(stats_mu_);
  train::CommStats s = stats_;
  s.compressed = compressor_ != nullptr;
  if (s.compressed) s.uncompressed_bytes = s.bytes_sent + saved_bytes_;
  return s;
}

PsHeader PsClient::Request() const {
  PsHeader h;
  h.from = static_cast<std::uint32_t>(options_.rank);
  return h;
}

Status PsClient::SendHeader(int k, PsMessage kind, const PsHeader& header, Deadline deadline) {
  std::array<float, kPsHeaderFloats> raw;
  EncodePsHeader(header, raw);
  Status s = links_[static_cast<std::size_t>(k)]->Send(PsRequestTag(kind), raw, deadline);
  if (!s.ok()) return Error(k, "sending a " + PsTagName(PsRequestTag(kind)), s);
  std::lock_guard lock(stats_mu_);
  stats_.bytes_sent += sizeof raw;
  return Status::Ok();
}

Status PsClient::SendData(int k, PsMessage kind, std::span<const float> data, Deadline deadline) {
  const std::uint32_t tag = PsDataTag(PsRequestTag(kind));
  Status s = links_[static_cast<std::size_t>(k)]->Send(tag, data, deadline);
  if (!s.ok()) return Error(k, "sending " + PsTagName(tag), s);
  std::lock_guard lock(stats_mu_);
  stats_.bytes_sent += data.size_bytes();
  return Status::Ok();
}

Result<PsHeader> PsClient::ReceiveReply(int k, PsMessage kind, const std::string& context) {
  std::array<float, kPsHeaderFloats> raw;
  const Clock::time_point start = Clock::now();
  Link& link = *links_[static_cast<std::size_t>(k)];
  Result<std::uint32_t> tag = link.RecvAnyTag(raw, start + options_.timeout);
  {
    std::lock_guard lock(stats_mu_);
    stats_.wait_seconds += Seconds(Clock::now() - start);
    if (tag.ok()) stats_.bytes_received += sizeof raw;
  }
  if (!tag.ok()) return Error(k, context + ": waiting for its reply", tag.status());
  const std::uint32_t want = PsReplyTag(kind);
  if (tag.value() != want) {
    return Status::Error("worker rank " + std::to_string(options_.rank) + ": " + Shard(k) + ": " +
                         context + ": the shard sent a " + PsTagName(tag.value()) +
                         " message where a " + PsTagName(want) + " was expected");
  }
  Result<PsHeader> h = DecodePsHeader(raw);
  if (!h.ok()) return Error(k, context, h.status());
  if ((h.value().flags & kPsRegroup) != 0) {
    return Status::Error("worker rank " + std::to_string(options_.rank) + ": " + Shard(k) + ": " +
                         context + ": the shard says membership " +
                         std::to_string(options_.membership) +
                         " lost a member: its members regroup");
  }
  if (h.value().from != static_cast<std::uint32_t>(k)) {
    return Status::Error("worker rank " + std::to_string(options_.rank) + ": " + Shard(k) + ": " +
                         context + ": the reply comes from shard " +
                         std::to_string(h.value().from) + " (are the links in shard order?)");
  }
  return h;
}

Status PsClient::ReceiveData(int k, PsMessage kind, std::span<float> out,
                             const std::string& context) {
  const std::uint32_t tag = PsDataTag(PsReplyTag(kind));
  Status s = links_[static_cast<std::size_t>(k)]->Recv(tag, out, Clock::now() + options_.timeout);
  if (!s.ok()) return Error(k, context + ": receiving its " + PsTagName(tag), s);
  std::lock_guard lock(stats_mu_);
  stats_.bytes_received += out.size_bytes();
  return Status::Ok();
}

Status PsClient::Hello(std::span<float> params, std::span<std::uint64_t> clocks,
                       std::uint64_t step) {
  if (Status u = Usable(); !u.ok()) return u;
  CallTimer timer([this](Clock::time_point start) { AddTime(start); });
  if (!params.empty() && params.size() != options_.num_params) {
    return Status::Error("worker rank " + std::to_string(options_.rank) +
                         ": hello: " + std::to_string(params.size()) + " parameters where " +
                         std::to_string(options_.num_params) + " were expected");
  }
  if (!clocks.empty() && clocks.size() != links_.size()) {
    return Status::Error("worker rank " + std::to_string(options_.rank) +
                         ": hello: " + std::to_string(clocks.size()) + " clocks for " +
                         std::to_string(links_.size()) + " shards");
  }
  const Deadline deadline = Clock::now() + options_.timeout;
  for (int k = 0; k < shards(); ++k) {
    const ShardRange& r = ranges_[static_cast<std::size_t>(k)];
    PsHeader h = Request();
    h.num_params = options_.num_params;
    h.begin = r.begin;
    h.end = r.end;
    h.shard = static_cast<std::uint32_t>(k);
    h.shards = static_cast<std::uint32_t>(shards());
    h.workers = static_cast<std::uint32_t>(options_.workers);
    h.mode = static_cast<std::uint32_t>(options_.mode);
    h.max_staleness = static_cast<std::uint32_t>(StalenessOrBackups());
    h.flags = params.empty() ? 0 : kPsWantParams;
    if (options_.members > 0) {
      h.clock = step;
      h.membership = options_.membership;
      h.position = static_cast<std::uint32_t>(options_.rank);
      h.members = static_cast<std::uint32_t>(options_.members);
    }
    if (compressor_) AnnouncePushes(compressor_->plan()[static_cast<std::size_t>(k)], h);
    if (Status s = SendHeader(k, PsMessage::kHello, h, deadline); !s.ok()) return Broken(s);
  }
  for (int k = 0; k < shards(); ++k) {
    const ShardRange& r = ranges_[static_cast<std::size_t>(k)];
    Result<PsHeader> reply = ReceiveReply(k, PsMessage::kHello, "hello");
    if (!reply.ok()) return Broken(reply.status());
    const PsHeader& h = reply.value();
    std::string mismatch;
    const auto differ = [&](const char* what, std::uint64_t ours, std::uint64_t theirs) {
      if (ours != theirs && mismatch.empty()) {
        mismatch = std::string(what) + ": the worker has " + std::to_string(ours) + ", the shard " +
                   std::to_string(theirs);
      }
    };
    differ("shards", static_cast<std::uint64_t>(shards()), h.shards);
    differ("shard index", static_cast<std::uint64_t>(k), h.shard);
    differ("parameter count", options_.num_params, h.num_params);
    differ("range begin", r.begin, h.begin);
    differ("range end", r.end, h.end);
    differ("workers", static_cast<std::uint64_t>(options_.workers), h.workers);
    if (h.mode != static_cast<std::uint32_t>(options_.mode) && mismatch.empty()) {
      mismatch = "mode: the worker has " + std::string(PsModeName(options_.mode)) + ", the shard " +
                 std::string(PsModeName(static_cast<PsMode>(h.mode & 1)));
    }
    differ(options_.mode == PsMode::kAsync ? "max_staleness" : "backup_workers",
           static_cast<std::uint64_t>(StalenessOrBackups()), h.max_staleness);
    PsHeader announced;
    if (compressor_) AnnouncePushes(compressor_->plan()[static_cast<std::size_t>(k)], announced);
    differ("encoding of compressed pushes (flags)", announced.flags,
           h.flags & (kPsBf16Pushes | kPsSparsePushes));
    differ("pairs of a compressed push", announced.rows, announced.rows != 0 ? h.rows : 0);
    const bool elastic = options_.members > 0;
    differ("membership epoch", elastic ? options_.membership : 0, h.membership);
    differ("position", elastic ? static_cast<std::uint64_t>(options_.rank) : 0, h.position);
    differ("members", static_cast<std::uint64_t>(options_.members), h.members);
    if (elastic) differ("completed step", step, h.clock);
    if (!mismatch.empty()) {
      return Broken(Status::Error("worker rank " + std::to_string(options_.rank) + ": " + Shard(k) +
                                  ": hello: the two sides disagree on the " + mismatch));
    }
    if (!params.empty()) {
      Status s = ReceiveData(k, PsMessage::kHello, params.subspan(r.begin, r.size()), "hello");
      if (!s.ok()) return Broken(s);
    }
    if (!clocks.empty()) clocks[static_cast<std::size_t>(k)] = h.clock;
    if (options_.mode == PsMode::kAsync) own_clock_ = std::max(own_clock_, h.basis);
  }
  greeted_ = true;
  return Status::Ok();
}

Result<std::uint32_t> PsClient::SyncStep(std::uint64_t step, std::span<const float> grad, float lr,
                                         std::size_t rows, std::size_t total_rows,
                                         std::uint32_t vote, std::span<float> params,
                                         bool propose_checkpoint, bool take_all) {
  if (Status u = Usable(); !u.ok()) return u;
  CallTimer timer([this](Clock::time_point start) { AddTime(start); });
  const std::string at = "step " + std::to_string(step);
  if (grad.size() != options_.num_params || params.size() != options_.num_params) {
    return Status::Error("worker rank " + std::to_string(options_.rank) + ": " + at + ": " +
                         std::to_string(grad.size()) + " gradient and " +
                         std::to_string(params.size()) + " parameter floats where " +
                         std::to_string(options_.num_params) + " were expected");
  }
  constexpr std::size_t kMaxRows = std::numeric_limits<std::uint32_t>::max();
  if (rows > kMaxRows || total_rows > kMaxRows) {
    return Status::Error("worker rank " + std::to_string(options_.rank) + ": " + at +
                         ": more rows than the protocol's u32 fields carry");
  }
  PsHeader h = Request();
  h.clock = step;
  h.lr = lr;
  h.rows = static_cast<std::uint32_t>(rows);
  h.total_rows = static_cast<std::uint32_t>(total_rows);
  h.vote = vote;
  h.flags = (propose_checkpoint ? kPsCheckpoint : 0) | (take_all ? kPsTakeAll : 0);
  const bool compressed =
      compressor_ && step >= static_cast<std::uint64_t>(options_.compression.warmup_steps);
  if (Status s = SendPushes(h, grad, compressed, {}, Clock::now() + options_.timeout); !s.ok()) {
    return Broken(s);
  }
  masks_.clear();
  clock_reached_ = step;
  std::uint32_t agreed = kNoVote;
  for (int k = 0; k < shards(); ++k) {
    const ShardRange& r = ranges_[static_cast<std::size_t>(k)];
    Result<PsHeader> reply = ReceiveReply(k, PsMessage::kPush, at);
    if (!reply.ok()) return Broken(reply.status());
    // With backup workers a late push is answered for a later step (ps_protocol.md).
    const bool late_allowed = options_.backup_workers > 0 && reply.value().clock > step;
    if (reply.value().clock != step && !late_allowed) {
      return Broken(Status::Error("worker rank " + std::to_string(options_.rank) + ": " + Shard(k) +
                                  ": the worker pushed step " + std::to_string(step) +
                                  " but the shard answered for step " +
                                  std::to_string(reply.value().clock)));
    }
    if (k > 0 && reply.value().vote != agreed) {
      return Broken(Status::Error("worker rank " + std::to_string(options_.rank) + ": " + at +
                                  ": " + Shard(k) + " agreed on stop vote " +
                                  std::to_string(reply.value().vote) + " but " + Shard(0) + " on " +
                                  std::to_string(agreed)));
    }
    const bool checkpoint = (reply.value().flags & kPsCheckpoint) != 0;
    if (k > 0 && checkpoint != checkpoint_agreed_) {
      return Broken(Status::Error("worker rank " + std::to_string(options_.rank) + ": " + at +
                                  ": " + Shard(k) + " and " + Shard(0) +
                                  " disagree on whether to checkpoint after it"));
    }
    agreed = reply.value().vote;
    checkpoint_agreed_ = checkpoint;
    Status s = ReceiveData(k, PsMessage::kPush, params.subspan(r.begin, r.size()), at);
    if (!s.ok()) return Broken(s);
    if (options_.backup_workers > 0) {
      // One shard: the masks of the steps from `step` to the reply's clock.
      clock_reached_ = reply.value().clock;
      std::vector<float> masks(2 * (clock_reached_ - step + 1));
      s = ReceiveData(k, PsMessage::kPush, masks, at + ": the masks");
      if (!s.ok()) return Broken(s);
      for (std::size_t i = 0; i < masks.size(); i += 2) masks_.push_back(GetU64(masks, i));
    }
  }
  return agreed;
}

Status PsClient::Push(std::uint64_t clock, std::span<const float> grad, float lr,
                      std::span<const std::uint64_t> basis) {
  if (Status u = Usable(); !u.ok()) return u;
  CallTimer timer([this](Clock::time_point start) { AddTime(start); });
  if (grad.size() != options_.num_params || basis.size() != links_.size()) {
    return Status::Error("worker rank " + std::to_string(options_.rank) + ": push at clock " +
                         std::to_string(clock) + ": " + std::to_string(grad.size()) +
                         " gradient floats and " + std::to_string(basis.size()) + " clocks where " +
                         std::to_string(options_.num_params) + " and " +
                         std::to_string(links_.size()) + " were expected");
  }
  PsHeader h = Request();
  h.clock = clock;
  h.lr = lr;
  const bool compressed =
      compressor_ && clock >= static_cast<std::uint64_t>(options_.compression.warmup_steps);
  if (Status s = SendPushes(h, grad, compressed, basis, Clock::now() + options_.timeout); !s.ok()) {
    return Broken(s);
  }
  return Status::Ok();
}

Status PsClient::SendPushes(PsHeader header, std::span<const float> grad, bool compressed,
                            std::span<const std::uint64_t> basis, Deadline deadline) {
  if (compressed) {
    const double before = compressor_->stats().seconds;
    compressor_->Encode(grad, encoded_);
    std::lock_guard lock(stats_mu_);
    stats_.compression_seconds += compressor_->stats().seconds - before;
  }
  const std::uint32_t flags = header.flags;
  std::size_t at = 0;  // shard k's message in encoded_
  for (int k = 0; k < shards(); ++k) {
    const auto i = static_cast<std::size_t>(k);
    const ShardRange& r = ranges_[i];
    std::span<const float> data = grad.subspan(r.begin, r.size());
    header.flags = flags;
    if (!basis.empty()) header.basis = basis[i];
    if (compressed) {
      const compress::TensorPlan& slice = compressor_->plan()[i];
      if (slice.encoding != compress::Encoding::kRaw) {
        header.flags |= kPsEncodedPush;
        data = std::span<const float>(encoded_).subspan(at, slice.sent_floats);
      }
      at += slice.sent_floats;
    }
    if (Status s = SendHeader(k, PsMessage::kPush, header, deadline); !s.ok()) return s;
    if (Status s = SendData(k, PsMessage::kPush, data, deadline); !s.ok()) return s;
    std::lock_guard lock(stats_mu_);
    saved_bytes_ += (r.size() - data.size()) * sizeof(float);
  }
  return Status::Ok();
}

Status PsClient::Fetch(std::uint64_t min_clock, std::span<float> params,
                       std::span<std::uint64_t> clocks) {
  if (Status u = Usable(); !u.ok()) return u;
  CallTimer timer([this](Clock::time_point start) { AddTime(start); });
  if (params.size() != options_.num_params || clocks.size() != links_.size()) {
    return Status::Error("worker rank " + std::to_string(options_.rank) +
                         ": fetch: " + std::to_string(params.size()) + " parameter floats and " +
                         std::to_string(clocks.size()) + " clocks where " +
                         std::to_string(options_.num_params) + " and " +
                         std::to_string(links_.size()) + " were expected");
  }
  const Deadline deadline = Clock::now() + options_.timeout;
  for (int k = 0; k < shards(); ++k) {
    PsHeader h = Request();
    h.clock = min_clock;
    if (Status s = SendHeader(k, PsMessage::kFetch, h, deadline); !s.ok()) return Broken(s);
  }
  const std::string at = "fetch (needing global clock >= " + std::to_string(min_clock) + ")";
  for (int k = 0; k < shards(); ++k) {
    const ShardRange& r = ranges_[static_cast<std::size_t>(k)];
    Result<PsHeader> reply = ReceiveReply(k, PsMessage::kFetch, at);
    if (!reply.ok()) return Broken(reply.status());
    if (reply.value().clock < min_clock) {
      return Broken(Status::Error("worker rank " + std::to_string(options_.rank) + ": " + Shard(k) +
                                  ": " + at + ": the shard answered at global clock " +
                                  std::to_string(reply.value().clock)));
    }
    Status s = ReceiveData(k, PsMessage::kFetch, params.subspan(r.begin, r.size()), at);
    if (!s.ok()) return Broken(s);
    clocks[static_cast<std::size_t>(k)] = reply.value().clock;
  }
  return Status::Ok();
}

Result<PsSnapshot> PsClient::Snapshot() {
  if (Status u = Usable(); !u.ok()) return u;
  CallTimer timer([this](Clock::time_point start) { AddTime(start); });
  const Deadline deadline = Clock::now() + options_.timeout;
  for (int k = 0; k < shards(); ++k) {
    if (Status s = SendHeader(k, PsMessage::kSnapshot, Request(), deadline); !s.ok()) {
      return Broken(s);
    }
  }
  PsSnapshot snap;
  snap.params.resize(options_.num_params);
  const auto workers = static_cast<std::size_t>(Members());
  std::vector<float> version(2 * workers);
  for (int k = 0; k < shards(); ++k) {
    const ShardRange& r = ranges_[static_cast<std::size_t>(k)];
    Result<PsHeader> reply = ReceiveReply(k, PsMessage::kSnapshot, "snapshot");
    if (!reply.ok()) return Broken(reply.status());
    const PsHeader& h = reply.value();
    if (h.begin != r.begin || h.end != r.end || h.workers != workers) {
      return Broken(Status::Error("worker rank " + std::to_string(options_.rank) + ": " + Shard(k) +
                                  ": snapshot: the shard describes range " +
                                  FormatRange(h.begin, h.end) + " and " +
                                  std::to_string(h.workers) + " workers, the worker expects " +
                                  FormatRange(r.begin, r.end) + " and " + std::to_string(workers)));
    }
    if (k == 0) {
      snap.state.assign(h.state_vectors, std::vector<float>(options_.num_params));
    } else if (h.state_vectors != snap.state.size()) {
      return Broken(Status::Error("worker rank " + std::to_string(options_.rank) + ": " + Shard(k) +
                                  ": snapshot: " + std::to_string(h.state_vectors) +
                                  " optimizer state vectors where " + Shard(0) + " has " +
                                  std::to_string(snap.state.size())));
    }
    Status s =
        ReceiveData(k, PsMessage::kSnapshot, std::span(snap.params).subspan(r.begin, r.size()),
                    "snapshot parameters");
    for (std::size_t i = 0; s.ok() && i < snap.state.size(); ++i) {
      s = ReceiveData(k, PsMessage::kSnapshot, std::span(snap.state[i]).subspan(r.begin, r.size()),
                      "snapshot optimizer state vector " + std::to_string(i));
    }
    if (s.ok()) s = ReceiveData(k, PsMessage::kSnapshot, version, "snapshot version vector");
    if (!s.ok()) return Broken(s);
    std::vector<std::uint64_t> clocks(workers);
    for (std::size_t w = 0; w < workers; ++w) clocks[w] = GetU64(version, 2 * w);
    snap.steps.push_back(h.steps);
    snap.global_clock.push_back(h.clock);
    snap.clocks.push_back(std::move(clocks));
  }
  return snap;
}

Result<std::vector<std::vector<float>>> PsClient::ExchangeResiduals(std::uint64_t next_step) {
  if (Status u = Usable(); !u.ok()) return u;
  const std::string me = "worker rank " + std::to_string(options_.rank);
  if (!compressor_ || options_.mode != PsMode::kSync) {
    return Status::Error(me + ": residuals belong to compressed sync pushes");
  }
  CallTimer timer([this](Clock::time_point start) { AddTime(start); });
  const std::string at = "the residuals of the checkpoint before step " + std::to_string(next_step);
  const std::span<const float> residual = compressor_->StateVectors().front();
  const Deadline deadline = Clock::now() + options_.timeout;
  for (int k = 0; k < shards(); ++k) {
    const ShardRange& r = ranges_[static_cast<std::size_t>(k)];
    PsHeader h = Request();
    h.clock = next_step;
    Status s = SendHeader(k, PsMessage::kResidual, h, deadline);
    if (s.ok()) {
      s = SendData(k, PsMessage::kResidual, residual.subspan(r.begin, r.size()), deadline);
    }
    if (!s.ok()) return Broken(s);
  }
  const auto workers = static_cast<std::size_t>(options_.workers);
  std::vector<std::vector<float>> all;
  if (options_.rank == 0) all.assign(workers, std::vector<float>(options_.num_params));
  for (int k = 0; k < shards(); ++k) {
    const ShardRange& r = ranges_[static_cast<std::size_t>(k)];
    Result<PsHeader> reply = ReceiveReply(k, PsMessage::kResidual, at);
    if (!reply.ok()) return Broken(reply.status());
    if (reply.value().clock != next_step || reply.value().workers != workers) {
      return Broken(Status::Error(me + ": " + Shard(k) + ": " + at +
                                  ": the shard answered for step " +
                                  std::to_string(reply.value().clock) + " and " +
                                  std::to_string(reply.value().workers) + " workers"));
    }
    for (std::size_t w = 0; w < all.size(); ++w) {
      Status s = ReceiveData(k, PsMessage::kResidual, std::span(all[w]).subspan(r.begin, r.size()),
                             at + ": worker rank " + std::to_string(w) + "'s");
      if (!s.ok()) return Broken(s);
    }
  }
  return all;
}

Status PsClient::Goodbye(std::uint64_t clock) {
  if (Status u = Usable(); !u.ok()) return u;
  CallTimer timer([this](Clock::time_point start) { AddTime(start); });
  const Deadline deadline = Clock::now() + options_.timeout;
  for (int k = 0; k < shards(); ++k) {
    PsHeader h = Request();
    h.clock = clock;
    if (Status s = SendHeader(k, PsMessage::kGoodbye, h, deadline); !s.ok()) return Broken(s);
  }
  for (int k = 0; k < shards(); ++k) {
    Result<PsHeader> reply = ReceiveReply(k, PsMessage::kGoodbye, "goodbye");
    if (!reply.ok()) return Broken(reply.status());
  }
  unusable_ = Status::Error("worker rank " + std::to_string(options_.rank) +
                            ": already said goodbye to the parameter servers");
  return Status::Ok();
}

}  // namespace dtrain::dist
