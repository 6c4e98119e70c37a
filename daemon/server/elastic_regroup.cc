// Elastic jobs (sync ring or local; config::ClusterConfig::Elastic): a lost replica leaves the
// membership while the others regroup on a smaller ring, and its replacement joins them at a step
// boundary. The rounds' rules are RegroupRound's (regroup_round.h); here they meet the channels,
// timers, processes and the store.
#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <cmath>

#include "core/net/auth.h"
#include "daemon/server/active_job.h"
#include "daemon/server/async.h"

namespace dtrain::server {

bool JobManager::LoseElasticReplica(Job& job, int rank, const std::string& how) {
  // Not when the others are as many as cluster.workers still: the job has the number it aims for.
  const std::vector<int>& members = job.regroup->members();
  const auto others = std::ranges::count_if(members, [rank](int m) { return m != rank; });
  const bool wanted = others < job.config.cluster.workers;
  // As OnWorkerExit decides next: the daemon starts its replacement while restarts last.
  const bool replaced = wanted && job.machine.RestartsAlone(rank) && !job.regroup_finished;
  RegroupStep step = job.regroup->Lost(rank, job.newest_step, replaced);
  if (step.failure) *step.failure = job.Who(rank) + " " + how + ": " + *step.failure;
  const bool carries_on = !step.failure;
  ApplyRegroup(job, std::move(step));
  if (carries_on) job.machine.CarriedOn(rank);
  return wanted;
}

void JobManager::ApplyRegroup(Job& job, RegroupStep step) {
  NoteEvents(job.id, std::move(step.events));
  for (int rank : step.kill) {
    if (job.machine.process(rank).exited) continue;
    job.machine.Silenced(rank);
    supervisor_.Stop(job.processes[static_cast<std::size_t>(rank)].pid,
                     std::chrono::milliseconds(0));
  }
  if (step.answer) {
    if (job.regroup_closed) job.regroup_closed->Set(true);
    const int last = step.answer->membership + (step.answers_the_next_round_too ? 1 : 0);
    for (int epoch = step.answer->membership; epoch <= last; ++epoch) {
      const auto waiting = job.regroup_answers.find(epoch);
      if (waiting == job.regroup_answers.end()) continue;
      waiting->second.Set(*step.answer);
      job.regroup_answers.erase(waiting);
    }
  }
  const int next = job.regroup->epoch() + 1;
  for (int rank : step.notify) job.regroup_notices[rank] = next;
  if (step.round_began) {
    job.regroup_closed.emplace(
        io_, std::chrono::milliseconds(std::llround(job.config.cluster.timeout_seconds * 1000.0)));
    asio::co_spawn(io_, ExpireRegroup(job.id, job.attempt, next), asio::detached);
  }
  if (step.failure) FailAttempt(job, *step.failure);
}

asio::awaitable<void> JobManager::ExpireRegroup(std::int64_t id, std::uint64_t attempt, int epoch) {
  const Job* job = Current(id, attempt);
  if (job == nullptr || job->regroup->epoch() + 1 != epoch) co_return;  // over already
  const Completion<bool> closed = *job->regroup_closed;                 // this round's
  if (co_await closed.Wait()) co_return;                                // it completed in time
  Job* now = Current(id, attempt);
  if (now == nullptr || !now->machine.failure().empty() || now->regroup_finished ||
      !now->regroup->round_open() || now->regroup->epoch() + 1 != epoch) {
    co_return;  // the attempt ended, or the members finished training
  }
  ApplyRegroup(*now,
               now->regroup->DeadlinePassed(now->newest_step, now->config.cluster.timeout_seconds));
}

void JobManager::NoteEvents(std::int64_t id, std::vector<std::string> events) {
  for (std::string& event : events) {
    store_.AppendLog(id, 0, "daemon", event);
    if (Queue(id, {std::nullopt, std::move(event), store::WallClock(), {}, true})) {
      asio::co_spawn(io_, StoreQueueWarning(id), asio::detached);  // the later ones with it
    }
  }
}

asio::awaitable<Result<Regrouped>> JobManager::WorkerRegroup(std::int64_t id, int rank,
                                                             const std::string& token,
                                                             int membership,
                                                             std::int64_t completed_step) {
  const Status refused = Status::Error("job " + std::to_string(id) + " has no elastic worker " +
                                       std::to_string(rank) + " with that token");
  auto [job, process] = FindProcess(id, rank);
  if (job == nullptr || !job->regroup || !job->machine.ready() || !process->admitted ||
      !net::TokensEqual(process->token, token) || job->machine.process(rank).exited) {
    co_return refused;
  }
  if (!job->machine.failure().empty()) {
    co_return Status::Error("the attempt failed: " + job->machine.failure());
  }
  job->regroup_notices.erase(rank);  // this request answers it
  const int epoch = job->regroup->AnswerEpoch(rank);
  RegroupStep step = job->regroup->Asked({rank, membership, completed_step});
  if (step.refused) co_return Status::Error(*step.refused);
  // Long enough for the round it waits behind and its own; each ends at its own deadline first.
  const auto rounds =
      std::chrono::milliseconds(std::llround(3 * job->config.cluster.timeout_seconds * 1000.0));
  const Completion<RegroupAnswer> answered =
      job->regroup_answers.try_emplace(epoch, io_, rounds).first->second;
  const std::uint64_t attempt = job->attempt;
  ApplyRegroup(*job, std::move(step));  // may answer it at once
  const std::optional<RegroupAnswer> answer = co_await answered.Wait();
  job = Current(id, attempt);
  if (job == nullptr) co_return refused;
  if (!answer) {
    std::string why = "the round did not complete within 3 x cluster.timeout_seconds";
    if (!job->machine.failure().empty()) {
      why = job->machine.failure();
    } else if (job->regroup_finished) {
      why = "the members finished training";
    }
    co_return Status::Error("regroup failed: " + why);
  }
  co_return Regrouped{*answer, job->admission.peers};
}

void JobManager::FinishElastic(Job& job) {
  job.regroup_finished = true;
  job.AbandonRegroups();  // a replacement waiting to join is told there is nothing to join
  const std::vector<int>& members = job.regroup->members();
  for (int rank = 0; rank < job.config.cluster.MostMembers(); ++rank) {
    const ProcessState& state = job.machine.process(rank);
    if (std::binary_search(members.begin(), members.end(), rank) || !state.started ||
        state.exited || state.stop_sent) {
      continue;
    }
    job.machine.CarriedOn(rank);
    supervisor_.Stop(job.processes[static_cast<std::size_t>(rank)].pid, settings_.grace);
  }
}

std::optional<int> JobManager::TakeRegroupNotice(std::int64_t id, int rank,
                                                 const std::string& token) {
  auto [job, process] = FindProcess(id, rank);
  if (job == nullptr || !net::TokensEqual(process->token, token)) return std::nullopt;
  const auto notice = job->regroup_notices.find(rank);
  if (notice == job->regroup_notices.end()) return std::nullopt;
  const int epoch = notice->second;
  job->regroup_notices.erase(notice);
  return epoch;
}

}  // namespace dtrain::server
