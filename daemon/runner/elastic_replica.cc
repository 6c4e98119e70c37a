#include "daemon/runner/elastic_replica.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>
#include <span>
#include <string>
#include <utility>

#include "config/mode_traits.h"
#include "core/dist/local_sgd_strategy.h"
#include "core/dist/ring_broadcast.h"
#include "daemon/runner/trainer_checkpoint.h"

namespace dtrain::runner {
namespace {

// The leader's state is the new ring's first message; no collective op has run on it yet.
constexpr std::uint32_t kStateTag = 0x7FFFFF00;

// The leader's state on the ring: its checkpoint, then the rows it owes its next step (u32
// each, little-endian like the checkpoint), then their count (u64). Only a sync job with backup
// workers owes rows between steps; its members all owe the same (ps_protocol.md, "Elastic jobs"),
// a joiner none until it takes the leader's.
std::string WithOwed(std::string checkpoint, std::span<const std::uint32_t> owed) {
  const std::size_t at = checkpoint.size();
  const std::uint64_t count = owed.size();
  checkpoint.resize(at + owed.size_bytes() + sizeof count);
  std::memcpy(checkpoint.data() + at, owed.data(), owed.size_bytes());
  std::memcpy(checkpoint.data() + at + owed.size_bytes(), &count, sizeof count);
  return checkpoint;
}

// Splits WithOwed's `state` back: `state` becomes the checkpoint. False when it cannot be one.
bool SplitOwed(std::string& state, std::vector<std::uint32_t>& owed) {
  std::uint64_t count = 0;
  if (state.size() < sizeof count) return false;
  std::memcpy(&count, state.data() + state.size() - sizeof count, sizeof count);
  const std::size_t rest = state.size() - sizeof count;
  if (count > rest / sizeof(std::uint32_t)) return false;
  owed.resize(count);
  const std::size_t at = rest - owed.size() * sizeof(std::uint32_t);
  std::memcpy(owed.data(), state.data() + at, owed.size() * sizeof(std::uint32_t));
  state.resize(at);
  return true;
}

std::string Ranks(const std::vector<int>& members) {
  std::string text;
  for (int r : members) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

}  // namespace

ElasticReplica::ElasticReplica(const config::JobConfig& job, const JobData& data,
                               Placement placement, Coordinate coordinate)
    : job_(job),
      data_(data),
      placement_(std::move(placement)),
      coordinate_(std::move(coordinate)),
      rolls_back_(config::TraitsOf(job.cluster.mode).exchange ==
                  config::Exchange::kPeriodicAverage) {}

bool ElasticReplica::Shared() const {
  return dist::LocalSgdStrategy::AveragesAt(session_->trainer().position().step,
                                            job_.cluster.average_every);
}

void ElasticReplica::KeepShared() {
  if (rolls_back_) store::CopyCheckpoint(ViewCheckpoint(session_->trainer()), shared_);
}

Status ElasticReplica::Begin(const store::CheckpointData* resume, std::vector<int> members) {
  placement_.members = std::move(members);
  if (placement_.members.empty()) {
    placement_.members.resize(static_cast<std::size_t>(job_.cluster.workers));
    std::iota(placement_.members.begin(), placement_.members.end(), 0);
  }
  if (!std::binary_search(placement_.members.begin(), placement_.members.end(), placement_.rank)) {
    return Status::Error("rank " + std::to_string(placement_.rank) +
                         " is not in its first membership [" + Ranks(placement_.members) + "]");
  }
  membership_ = 0;
  placement_.membership = 0;
  Result<std::unique_ptr<TrainingSession>> made = TrainingSession::Make(job_, data_, placement_);
  if (!made.ok()) return made.status();
  session_ = std::move(made).value();
  if (Status started = RestoreOrInit(resume, session_->trainer()); !started.ok()) return started;
  KeepShared();
  return session_->Start();
}

Status ElasticReplica::Join() { return Enter({}, {}); }

Status ElasticReplica::Regroup() {
  train::Trainer& trainer = session_->trainer();
  // Mode "local": the last average's state, not this member's own since then.
  std::string state =
      rolls_back_ ? WithOwed(store::EncodeCheckpoint(shared_), {})
                  : WithOwed(store::EncodeCheckpoint(ViewCheckpoint(trainer)), trainer.owed());
  const RegroupRequest request{membership_, rolls_back_ ? shared_.step : trainer.position().step};
  session_.reset();  // closes its links
  return Enter(request, std::move(state));
}

Status ElasticReplica::Enter(const RegroupRequest& request, std::string state) {
  Result<Membership> answer = coordinate_(request);
  if (!answer.ok()) return Status::Error("regroup refused: " + answer.status().message());
  Membership& next = answer.value();
  const auto mine = std::find(next.members.begin(), next.members.end(), placement_.rank);
  const auto leader = std::find(next.members.begin(), next.members.end(), next.leader);
  const std::size_t ranks = next.peers.empty() ? placement_.peers.size() : next.peers.size();
  const bool ascending = std::adjacent_find(next.members.begin(), next.members.end(),
                                            std::greater_equal<>()) == next.members.end();
  const bool known = !next.members.empty() && next.members.front() >= 0 &&
                     static_cast<std::size_t>(next.members.back()) < ranks;
  if (mine == next.members.end() || leader == next.members.end() || !ascending || !known) {
    return Status::Error("regroup: rank " + std::to_string(placement_.rank) +
                         " cannot train in membership [" + Ranks(next.members) + "] led by " +
                         std::to_string(next.leader));
  }
  if (next.leader == placement_.rank && request.completed_step < 0) {
    return Status::Error("regroup: a joiner cannot lead");
  }
  if (!next.peers.empty()) placement_.peers = std::move(next.peers);
  placement_.members = next.members;
  membership_ = next.epoch;
  placement_.membership = next.epoch;
  Result<std::unique_ptr<TrainingSession>> made = TrainingSession::Make(job_, data_, placement_);
  if (!made.ok()) return Status::Error("regroup: " + made.status().message());
  session_ = std::move(made).value();
  const RingSeat at = seat();
  const dist::Deadline deadline = dist::Clock::now() + JobTimeout(job_);
  // On parameter servers the members have no ring of their own: they join one over their
  // data-plane listeners for the broadcast only (closed when it is done).
  dist::RingLinks state_ring;
  if (session_->ring_links().left == nullptr) {
    std::vector<dist::Endpoint> ring;
    for (int r : placement_.members) ring.push_back(placement_.peers[static_cast<std::size_t>(r)]);
    // The session has connected, so the placement has the listener and every peer's address.
    // Over TCP: one message, and the links close as soon as it has gone around.
    Result<dist::RingLinks> joined =
        dist::JoinRing(at.position, ring, *placement_.listener, deadline, placement_.data_token,
                       dist::LinkTransport::kTcp);
    if (!joined.ok()) {
      session_.reset();
      return Status::Error("regroup: the members' ring: " + joined.status().message());
    }
    state_ring = std::move(joined).value();
  }
  Result<std::string> taken = dist::RingBroadcast(
      at.position, at.world,
      session_->ring_links().left != nullptr ? session_->ring_links() : state_ring,
      static_cast<int>(leader - next.members.begin()),
      next.leader == placement_.rank ? std::move(state) : std::string(), kStateTag, deadline);
  if (!taken.ok()) {
    session_.reset();
    return Status::Error("regroup: the leader's state: " + taken.status().message());
  }
  std::vector<std::uint32_t> owed;
  Result<store::CheckpointData> decoded = SplitOwed(taken.value(), owed)
                                              ? store::DecodeCheckpoint(taken.value())
                                              : Status::Error("too short for its rows owed");
  Status restored =
      decoded.ok() ? RestoreCheckpoint(decoded.value(), session_->trainer()) : decoded.status();
  if (restored.ok()) session_->trainer().set_owed(owed);
  if (!restored.ok()) {
    session_.reset();
    return Status::Error("regroup: the leader's state: " + restored.message());
  }
  if (rolls_back_) shared_ = std::move(decoded).value();  // what every member restored
  return session_->Start();
}

Result<train::StopReason> ElasticReplica::Train(const config::CheckpointConfig& policy,
                                                RunRecorder& recorder, RunOptions options,
                                                std::int64_t last_saved_step) {
  if (rolls_back_) {
    // Right after each average, a copy of the state every member then holds; and checkpoints
    // only there.
    options.after_step = [this, told = std::move(options.after_step)] {
      if (Shared()) KeepShared();
      if (told) told();
    };
    options.checkpoint_at = [every = job_.cluster.average_every](std::int64_t step) {
      return dist::LocalSgdStrategy::AveragesAt(step, every);
    };
  }
  for (;;) {
    options.checkpoints = seat().position == 0;
    options.capture = session_->Capturer();
    Result<train::StopReason> why =
        TrainRecorded(session_->trainer(), policy, recorder, options, last_saved_step);
    const bool stopping = options.stop != nullptr && options.stop->load();
    if (why.ok() || train::IsDivergence(why.status()) || stopping) return why;
    if (Status regrouped = Regroup(); !regrouped.ok()) {
      return Status::Error(why.status().message() + "; then " + regrouped.message());
    }
    if (options.observer != nullptr) {
      options.observer->OnEvent("regrouped: membership " + std::to_string(membership_) + " of " +
                                std::to_string(seat().world) + " (ranks " +
                                Ranks(placement_.members) + "), at step " +
                                std::to_string(session_->trainer().position().step));
    }
    last_saved_step = -1;
  }
}

}  // namespace dtrain::runner
