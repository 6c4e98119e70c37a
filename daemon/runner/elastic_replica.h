// ElasticReplica: one replica of an elastic job (RunsElastic: sync on the ring or on parameter
// servers, or local) — its
// TrainingSession for the current membership, and the regroup that replaces it when a peer is lost
// or a replacement joins, in the same process, from memory (issue 46; control_protocol.md,
// "regroup").
//
//   ElasticReplica replica(job, data, placement, coordinate);   // coordinate: the regroup exchange
//   Status s = joining ? replica.Join() : replica.Begin(resume, members);
//   Result<train::StopReason> why = replica.Train(job.checkpoint, recorder, options);
//
// A regroup: the replica captures its state (the checkpoint it would write), closes its session
// (its links: its ring neighbours fail at once), asks the coordinator (membership epoch it trained
// in, steps completed), and on the answer joins the ring of the new members at its position there;
// the leader's state goes around that ring (dist::RingBroadcast) and every member, the leader
// too, restores it. On a parameter server (ps_protocol.md, "Elastic jobs") the regroup starts with
// the shard's regroup reply, the ring is joined over the members' data-plane listeners for the
// broadcast only, and the session then says hello to the shard as the new membership's member
// (the shard holds the parameters and optimizer state after the last step applied, which the
// leader, the member with the most completed steps, saw; with backup workers the leader's state
// also carries the rows it owes its next step, Trainer::owed). So the members are bitwise identical
// again, at the leader's step, and train on with the job's global batch split over the new world.
// The member at position 0 writes the job's checkpoints. Mode "local" (local SGD): between
// parameter averages each member's state is its own, so the one it offers is the last every member
// shared — a copy it keeps right after each average (and of the state it began, joined or regrouped
// with), with that step as its completed steps. The leader (fewest completed) is then the member
// whose copy is of the oldest average, everyone rolls back to it, optimizer state included, and at
// most average_every steps are redone, their rows taken again by the new membership. Its
// checkpoints are written right after averages (RunOptions::checkpoint_at), and at the run's end.
// Invariants: a session exists between a successful Begin/Join/Regroup and the next regroup; the
// placement's listener and token stay the same for life; in mode "local", shared_ holds the
// state of the last average the session took part in (or its first state), at its step.
// One thread at a time (the training thread); `data` and the listener must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "config/job.h"
#include "core/dist/peer_links.h"
#include "core/status.h"
#include "daemon/runner/job_data.h"
#include "daemon/runner/recorded_training.h"
#include "daemon/runner/training_session.h"
#include "daemon/store/checkpoint.h"

namespace dtrain::runner {

// What a replica tells the coordinator when it regroups: the membership epoch it trained in last
// and the steps it completed (a joiner: -1 and -1).
struct RegroupRequest {
  std::int64_t membership = -1;
  std::int64_t completed_step = -1;
};

// The coordinator's answer: the new membership's epoch, its ranks (ascending), the rank whose
// state everyone takes, and every rank's data-plane address (empty: unchanged).
struct Membership {
  std::int64_t epoch = 0;
  std::vector<int> members;
  int leader = 0;
  std::vector<dist::Endpoint> peers;
};

// Sends the request and returns the coordinator's answer (or why there is none).
using Coordinate = std::function<Result<Membership>(const RegroupRequest&)>;

class ElasticReplica {
 public:
  ElasticReplica(const config::JobConfig& job, const JobData& data, Placement placement,
                 Coordinate coordinate);

  // The attempt's first membership (epoch 0): `members` (ascending, this rank among them), or
  // every rank when empty; from `resume`, else fresh parameters.
  Status Begin(const store::CheckpointData* resume, std::vector<int> members = {});
  // A replacement: regroups as a joiner and takes the leader's state.
  Status Join();
  // After the ring failed: this replica's state captured, its session closed, the new membership
  // joined and the leader's state restored. An error leaves no session.
  Status Regroup();
  // Closes the ring now (told to regroup, at a step boundary): the next step fails everywhere.
  void LeaveRing() { session_->LeaveRing(); }

  TrainingSession& session() { return *session_; }
  RingSeat seat() const { return SeatOf(job_, placement_); }
  std::int64_t membership() const { return membership_; }

  // TrainRecorded until the run ends, regrouping after each ring failure; the member at position
  // 0 writes the checkpoints (mode "local": right after averages). Ends on success, a divergence,
  // a stop request, or a failed regroup (its error after the ring's).
  Result<train::StopReason> Train(const config::CheckpointConfig& policy, RunRecorder& recorder,
                                  RunOptions options, std::int64_t last_saved_step);

 private:
  // Asks the coordinator, joins the new membership, and restores the leader's `state` (this
  // replica's own encoded checkpoint; empty for a joiner) into the new session.
  Status Enter(const RegroupRequest& request, std::string state);
  // Mode "local": whether the session's state after its last step is one every member shares.
  bool Shared() const;
  // Mode "local": copies the session's state into shared_ (nothing in sync jobs).
  void KeepShared();

  const config::JobConfig& job_;
  const JobData& data_;
  Placement placement_;
  Coordinate coordinate_;
  std::int64_t membership_ = 0;
  std::unique_ptr<TrainingSession> session_;
  const bool rolls_back_;         // mode "local": members step apart between averages
  store::CheckpointData shared_;  // mode "local": the state of the last average, its buffers reused
};

}  // namespace dtrain::runner
