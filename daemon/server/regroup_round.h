// RegroupRound: the membership of an elastic (sync ring or local) attempt (ClusterConfig::Elastic)
// and its regroup rounds, as a pure, synchronous type like AttemptMachine: it is told losses (and
// whether a replacement is being started), admitted replacements (joiners), the members' `regroup`
// requests and a round's deadline passing, and answers with what to do — events to record,
// members to tell `regroup_now`, processes to kill, the answer of a completed round, or why the
// attempt fails. JobManager turns its answers into channel replies, timers, kills and store writes
// (daemon/control_protocol.md, "regroup").
//
//   RegroupRound round(job.cluster.workers, job.cluster.FewestMembers(), {},
//                      job.cluster.MostMembers());
//   RegroupStep s = round.Lost(2, newest_step, true);  // "worker 2 lost at step 40, 2 carry on"
//   s = round.Asked({0, 0, 40});  s = round.Asked({1, 0, 41});   // s.answer: epoch 1, {0, 1}
//
// Invariants: members() is ascending and never holds a joiner; at most one round is open; a
// round's expected processes are the members and the joiners admitted before it began (a joiner
// admitted during a round that is not short waits for the next, which begins as it completes); a
// round completes once every expected process has asked and they are at least min_workers, or at
// its deadline, with members = the ranks that asked and, as leader, the member (never a joiner)
// with the smallest completed step (a ring's or local job's: none has gone past it), or on a
// parameter server the largest (the shard holds the state after the newest step applied, which a
// member that left between steps, with backup workers, may not have seen; ties: the lowest rank);
// epoch() grows by one per completed round.
// Every round opens by telling the members that have not asked (`notify`) to regroup now, whether
// a loss, a join or a member's request opened it: a local job's member would otherwise go on
// alone until its next average (a sync member's next step fails anyway; the notice is harmless).
// Fewer than min_workers members (short): while one survives and replacements enough are admitted
// or being started, the open round waits for them, taking in every joiner (those waiting for the
// next round too) until it completes; else the attempt fails. A round with neither a loss nor a
// join, or with fewer than min_workers askers at its deadline, fails the attempt.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dtrain::server {

// A worker's `regroup`: the membership epoch it trained in last and the steps it completed
// (both -1 for a joiner).
struct RegroupRequest {
  int rank = 0;
  int membership = -1;
  std::int64_t completed_step = -1;
};

// What a completed round tells everyone who asked.
struct RegroupAnswer {
  int membership = 0;        // the new epoch
  std::vector<int> members;  // ascending
  int leader = 0;            // whose state every member takes
  std::int64_t step = 0;     // the leader's completed step: where training goes on
};

// What the caller does after an event, in this order.
struct RegroupStep {
  std::vector<std::string> events;      // job events to record
  std::vector<int> kill;                // missed the round's deadline: killed, counted as lost
  std::optional<RegroupAnswer> answer;  // the open round completed
  // The answer also goes to the requests waiting for the round after it (AnswerEpoch was
  // epoch() + 2 when they came): the short round took their joiners in.
  bool answers_the_next_round_too = false;
  std::vector<int> notify;             // to be told `regroup_now` with membership = epoch() + 1
  bool round_began = false;            // a new round is open: its deadline runs from now
  std::optional<std::string> refused;  // this request is not answered: why
  std::optional<std::string> failure;  // the attempt fails: why
};

class RegroupRound {
 public:
  // Epoch 0: `members` (ascending; empty: every rank of `workers`) — a job started with fewer
  // replicas than `workers` grows by admitting the others as joiners, up to `max_workers` (0:
  // `workers`); `min_workers` the fewest a round may keep. Only the events tell the sizes apart:
  // "N of W" members, or "N of W..M" where the job may grow beyond W to M. `newest_leads`: the
  // member with the most completed steps leads (a job on a parameter server), else the fewest.
  RegroupRound(int workers, int min_workers, std::vector<int> members = {}, int max_workers = 0,
               bool newest_leads = false);

  // Rank `rank`'s process is gone (a bad exit, or silence) while `recorded_step` was the newest
  // step the job recorded; `replaced`: a replacement for it is being started. A member leaves the
  // membership (an event); a joiner is forgotten; any other rank changes nothing, but for whether
  // its replacement (one lost before) is being started again. Fewer than min_workers members
  // left: the round waits for replacements, or the attempt fails when none survives or too few
  // replacements can come.
  RegroupStep Lost(int rank, std::int64_t recorded_step, bool replaced);
  // The replacement for the lost rank `rank` will not be started after all (the restarts were
  // spent meanwhile): fails the attempt if the round waited for it in vain.
  RegroupStep NotReplaced(int rank);
  // A replacement for rank `rank` was admitted: it joins at the next round, which begins now
  // (telling the members) unless one is open; a short round takes it in at once.
  RegroupStep Joined(int rank);
  // A `regroup` request; a member's opens a round when none is open.
  RegroupStep Asked(const RegroupRequest& request);
  // The open round's deadline, `waited_seconds` after it began, passed: those expected that did
  // not ask are lost (to be killed), `recorded_step` being the newest step the job recorded.
  RegroupStep DeadlinePassed(std::int64_t recorded_step, double waited_seconds);

  int epoch() const { return epoch_; }
  const std::vector<int>& members() const { return members_; }
  bool round_open() const { return open_; }
  // The epoch of the round that answers `rank`'s request now (the open one, or for a joiner
  // waiting for the next one, that), for the caller to wait on.
  int AnswerEpoch(int rank) const;

 private:
  bool IsMember(int rank) const;
  // Fewer than min_workers members: only while a round waits for replacements.
  bool Short() const { return static_cast<int>(members_.size()) < min_workers_; }
  // Short with no survivor, or with too few replacements admitted or being started: why the
  // attempt fails.
  std::optional<std::string> Stranded() const;
  void RemoveMember(int rank);
  // After RemoveMember: "worker R lost at step S, N carry on" ("N wait for replacements (...)"
  // when `waits`).
  std::string LossEvent(int rank, std::int64_t recorded_step, bool waits) const;
  // The short open round takes the joiners waiting for the next one in, with their requests.
  void TakeInWaiting();
  // Opens a round of the members and the waiting joiners, telling every member but `asker` (whose
  // request opens it) to regroup now: a member of a local job touches its ring only at its next
  // average, and would not notice the round before then.
  void Open(RegroupStep& step, int asker = -1);
  void CompleteIfAllAsked(RegroupStep& step);
  void Complete(RegroupStep& step);

  int workers_;
  int min_workers_;
  bool newest_leads_;
  std::string of_workers_;  // " of W", or " of W..M" where max_workers M is above workers W
  int epoch_ = 0;
  std::vector<int> members_;
  bool open_ = false;
  std::set<int> expected_;             // the open round's
  std::vector<RegroupRequest> asked_;  // the open round's requests, in arrival order
  std::set<int> joiners_;              // admitted, in the open round
  std::set<int> waiting_;              // admitted during the open round: the next one's
  std::vector<RegroupRequest> early_;  // waiting joiners' requests
  bool took_early_ = false;            // the open round took in early_ requests
  std::set<int> replacing_;            // lost ranks whose replacements are being started
  bool changed_ = false;               // a loss or a join since the last round completed
};

}  // namespace dtrain::server
