#include "core/dist/sparse_ps_client.h"

#include <algorithm>
#include <bit>
#include <numeric>

#include "core/dist/parameter_shard.h"
#include "core/sparse/key_shards.h"

namespace dtrain::dist {

SparseShardClient::SparseShardClient(std::span<Link* const> shard_links,
                                     SparseClientOptions options, const sparse::SparseModel& model)
    : links_(shard_links.begin(), shard_links.end()),
      options_(options),
      model_(model),
      shard_keys_(shard_links.size()),
      places_(shard_links.size()),
      shard_key_counts_(shard_links.size(), 0),
      pulled_at_(shard_links.size(), 0) {
  if (links_.empty()) broken_ = Status::Error("a sparse model on no shards");
}

Status SparseShardClient::Broken(int k, const std::string& what, const Status& status) {
  broken_ = Status::Error("worker rank " + std::to_string(options_.rank) + ": sparse shard " +
                          std::to_string(k) + " of " + std::to_string(shards()) + ": " + what +
                          ": " + status.message());
  return broken_;
}

Status SparseShardClient::Request(int k, SparseMessage kind, const PsHeader& header) {
  PsHeader h = header;
  h.from = static_cast<std::uint32_t>(options_.rank);
  EncodePsHeader(h, std::span<float, kPsHeaderFloats>(header_));
  {
    std::lock_guard lock(stats_mu_);
    stats_.bytes_sent += sizeof(header_);
  }
  return links_[static_cast<std::size_t>(k)]->Send(SparseRequestTag(kind), header_, NextDeadline());
}

Status SparseShardClient::Data(int k, SparseMessage kind, std::span<const float> data) {
  {
    std::lock_guard lock(stats_mu_);
    stats_.bytes_sent += data.size_bytes();
  }
  return links_[static_cast<std::size_t>(k)]->Send(SparseDataTag(SparseRequestTag(kind)), data,
                                                   NextDeadline());
}

Result<PsHeader> SparseShardClient::Reply(int k, SparseMessage kind) {
  const auto start = Clock::now();
  Status got =
      links_[static_cast<std::size_t>(k)]->Recv(SparseReplyTag(kind), header_, NextDeadline());
  {
    std::lock_guard lock(stats_mu_);
    stats_.wait_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    stats_.bytes_received += sizeof(header_);
  }
  if (!got.ok()) return got;
  return DecodePsHeader(std::span<const float, kPsHeaderFloats>(header_));
}

Status SparseShardClient::ReplyData(int k, SparseMessage kind, std::span<float> out) {
  {
    std::lock_guard lock(stats_mu_);
    stats_.bytes_received += out.size_bytes();
  }
  return links_[static_cast<std::size_t>(k)]->Recv(SparseDataTag(SparseReplyTag(kind)), out,
                                                   NextDeadline());
}

Status SparseShardClient::Hello() {
  if (!broken_.ok()) return broken_;
  for (int k = 0; k < shards(); ++k) {
    PsHeader h;
    h.shard = static_cast<std::uint32_t>(k);
    h.shards = static_cast<std::uint32_t>(shards());
    h.workers = static_cast<std::uint32_t>(options_.workers);
    h.mode = static_cast<std::uint32_t>(options_.mode);
    h.max_staleness = static_cast<std::uint32_t>(options_.max_staleness);
    if (Status s = Request(k, SparseMessage::kHello, h); !s.ok()) return Broken(k, "hello", s);
  }
  for (int k = 0; k < shards(); ++k) {
    Result<PsHeader> r = Reply(k, SparseMessage::kHello);
    if (!r.ok()) return Broken(k, "hello", r.status());
    if (r.value().shard != static_cast<std::uint32_t>(k) ||
        r.value().shards != static_cast<std::uint32_t>(shards()) ||
        r.value().workers != static_cast<std::uint32_t>(options_.workers) ||
        r.value().mode != static_cast<std::uint32_t>(options_.mode) ||
        r.value().max_staleness != static_cast<std::uint32_t>(options_.max_staleness)) {
      return Broken(k, "hello",
                    Status::Error("the shard is " + std::to_string(r.value().shard) + " of " +
                                  std::to_string(r.value().shards) + " serving " +
                                  std::to_string(r.value().workers) + " workers in mode " +
                                  std::string(PsModeName(static_cast<PsMode>(r.value().mode & 1))) +
                                  ", max_staleness " + std::to_string(r.value().max_staleness)));
    }
  }
  return Status::Ok();
}

void SparseShardClient::Split(std::span<const std::uint32_t> keys) {
  for (std::size_t k = 0; k < links_.size(); ++k) {
    shard_keys_[k].clear();
    places_[k].clear();
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto k = static_cast<std::size_t>(sparse::ShardOfKey(keys[i], shards()));
    shard_keys_[k].push_back(std::bit_cast<float>(keys[i]));  // the wire form (KeysToFloats)
    places_[k].push_back(static_cast<std::uint32_t>(i));
  }
}

Status SparseShardClient::PullOrLookup(std::span<const std::uint32_t> keys, float* slots,
                                       float* globals, std::uint32_t flags) {
  if (!broken_.ok()) return broken_;
  const auto start = Clock::now();
  Split(keys);
  for (int k = 0; k < shards(); ++k) {
    PsHeader h;
    h.rows = static_cast<std::uint32_t>(shard_keys_[k].size());
    h.flags = flags;
    h.clock = clock_;
    Status s = Request(k, SparseMessage::kPull, h);
    if (s.ok()) s = Data(k, SparseMessage::kPull, shard_keys_[k]);
    if (!s.ok()) return Broken(k, "pull", s);
  }
  const std::size_t width = model_.SlotWidth();
  shard_globals_.resize(model_.GlobalWidth());
  for (int k = 0; k < shards(); ++k) {
    Result<PsHeader> r = Reply(k, SparseMessage::kPull);
    if (!r.ok()) return Broken(k, "pull", r.status());
    const std::size_t count = places_[k].size();
    if (r.value().rows != count) {
      return Broken(k, "pull",
                    Status::Error("the reply holds " + std::to_string(r.value().rows) + " keys, " +
                                  std::to_string(count) + " were asked"));
    }
    shard_key_counts_[k] = r.value().basis;
    if ((flags & kSparseLookupOnly) == 0) pulled_at_[k] = r.value().clock;
    values_.resize(count * width);
    Status s = ReplyData(k, SparseMessage::kPull, values_);
    if (s.ok()) s = ReplyData(k, SparseMessage::kPull, shard_globals_);
    if (!s.ok()) return Broken(k, "pull", s);
    for (std::size_t i = 0; i < count; ++i) {
      std::copy_n(values_.data() + i * width, width, slots + places_[k][i] * width);
    }
    if (k == 0) std::copy(shard_globals_.begin(), shard_globals_.end(), globals);
  }
  std::lock_guard lock(stats_mu_);
  stats_.comm_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  return Status::Ok();
}

Status SparseShardClient::Pull(std::span<const std::uint32_t> keys, float* slots, float* globals) {
  return PullOrLookup(keys, slots, globals, 0);
}

Status SparseShardClient::Lookup(std::span<const std::uint32_t> keys, float* slots,
                                 float* globals) {
  return PullOrLookup(keys, slots, globals, kSparseLookupOnly);
}

Status SparseShardClient::Push(std::span<const std::uint32_t> keys, const float* grad_slots,
                               const float* grad_globals, float lr, std::size_t rows) {
  if (!broken_.ok()) return broken_;
  const auto start = Clock::now();
  Split(keys);
  const std::size_t width = model_.SlotWidth();
  for (int k = 0; k < shards(); ++k) {
    const std::size_t count = places_[k].size();
    values_.resize(count * width);
    for (std::size_t i = 0; i < count; ++i) {
      std::copy_n(grad_slots + places_[k][i] * width, width, values_.data() + i * width);
    }
    PsHeader h;
    h.rows = static_cast<std::uint32_t>(count);
    h.lr = lr;
    h.flags = k == 0 ? kSparseWithGlobals : 0;
    h.clock = clock_;
    h.basis = pulled_at_[k];
    h.total_rows = static_cast<std::uint32_t>(rows);
    h.vote = vote_;
    Status s = Request(k, SparseMessage::kPush, h);
    if (s.ok()) s = Data(k, SparseMessage::kPush, shard_keys_[k]);
    if (s.ok()) s = Data(k, SparseMessage::kPush, values_);
    if (s.ok() && k == 0) {
      s = Data(k, SparseMessage::kPush, {grad_globals, model_.GlobalWidth()});
    }
    if (!s.ok()) return Broken(k, "push", s);
  }
  ++clock_;
  if (Collective()) {  // the step applied on every shard, and the vote agreed
    std::uint32_t agreed = kNoVote;
    for (int k = 0; k < shards(); ++k) {
      Result<PsHeader> r = Reply(k, SparseMessage::kPush);
      if (!r.ok()) return Broken(k, "push", r.status());
      if (k > 0 && r.value().vote != agreed) {
        return Broken(k, "push",
                      Status::Error("stop vote " + std::to_string(r.value().vote) +
                                    ", but shard 0 agreed on " + std::to_string(agreed)));
      }
      agreed = r.value().vote;
    }
    vote_ = kNoVote;
    if (agreed != kNoVote) agreed_ = train::FromStopVote(agreed);
  }
  std::lock_guard lock(stats_mu_);
  stats_.comm_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  return Status::Ok();
}

bool SparseShardClient::ProposeStop(train::StopReason reason) {
  if (!Collective()) return false;
  vote_ = std::max(vote_, train::StopVote(reason));
  return true;
}

std::uint64_t SparseShardClient::KeyCount() const {
  return std::accumulate(shard_key_counts_.begin(), shard_key_counts_.end(), std::uint64_t{0});
}

Result<sparse::KeyTableState> SparseShardClient::Snapshot() {
  if (!broken_.ok()) return broken_;
  for (int k = 0; k < shards(); ++k) {
    if (Status s = Request(k, SparseMessage::kSnapshot, {}); !s.ok()) {
      return Broken(k, "snapshot", s);
    }
  }
  const std::size_t width = model_.SlotWidth(), global_width = model_.GlobalWidth();
  std::vector<sparse::KeyTableState> parts(links_.size());
  for (int k = 0; k < shards(); ++k) {
    Result<PsHeader> r = Reply(k, SparseMessage::kSnapshot);
    if (!r.ok()) return Broken(k, "snapshot", r.status());
    const std::size_t count = r.value().rows;
    sparse::KeyTableState& part = parts[static_cast<std::size_t>(k)];
    std::vector<float> key_floats(count);
    part.slots.resize(count * width);
    part.state.assign(r.value().state_vectors, std::vector<float>(count * width + global_width));
    part.globals.resize(global_width);
    Status s = ReplyData(k, SparseMessage::kSnapshot, key_floats);
    if (s.ok()) s = ReplyData(k, SparseMessage::kSnapshot, part.slots);
    for (std::vector<float>& v : part.state) {
      if (s.ok()) s = ReplyData(k, SparseMessage::kSnapshot, v);
    }
    if (s.ok()) s = ReplyData(k, SparseMessage::kSnapshot, part.globals);
    if (!s.ok()) return Broken(k, "snapshot", s);
    part.keys.resize(count);
    FloatsToKeys(key_floats, part.keys);
  }
  return sparse::JoinShardParts(parts, width, global_width);
}

Status SparseShardClient::Goodbye() {
  if (!broken_.ok()) return broken_;
  for (int k = 0; k < shards(); ++k) {
    if (Status s = Request(k, SparseMessage::kGoodbye, {}); !s.ok()) {
      return Broken(k, "goodbye", s);
    }
  }
  for (int k = 0; k < shards(); ++k) {
    if (Result<PsHeader> r = Reply(k, SparseMessage::kGoodbye); !r.ok()) {
      return Broken(k, "goodbye", r.status());
    }
  }
  return Status::Ok();
}

train::CommStats SparseShardClient::Stats() const {
  std::lock_guard lock(stats_mu_);
  return stats_;
}

}  // namespace dtrain::dist
