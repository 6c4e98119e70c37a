// JobManager's part for jobs with cluster.scheduler = "slurm": placing them, asking Slurm for
// each attempt's allocation, starting each process as a task in it, and ending the allocation
// (and those an elastic job grew by: slurm_growth.cc) with the attempt
// (daemon/server/slurm_commands.h has the commands).
#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <nlohmann/json.hpp>

#include "daemon/server/active_job.h"
#include "daemon/server/async.h"
#include "daemon/server/slurm_commands.h"

namespace dtrain::server {

Placed JobManager::PlaceOnSlurm(Job& job) const {
  Placed placed;
  if (settings_.coordinator.empty()) {
    placed.error =
        "cluster.scheduler = \"slurm\" needs this daemon to listen on TCP, where the job's Slurm "
        "tasks connect back: set [cluster] listen in dtraind.toml";
    return placed;
  }
  for (const char* program : {"salloc", "srun", "scancel", "scontrol"}) {
    if (!FindProgram(program)) {
      placed.error = std::string("cluster.scheduler = \"slurm\", but Slurm's ") + program +
                     " is not on this daemon's PATH (install slurm-client)";
      return placed;
    }
  }
  placed.nodes.assign(static_cast<std::size_t>(job.config.cluster.Processes()),
                      settings_.node_name);
  job.cores = 0;  // Slurm's, not this host's
  return placed;
}

asio::awaitable<Result<std::vector<std::string>>> JobManager::RunSlurmCommand(
    Owner owner, SlurmCommand command) {
  const std::string name = command.argv.front();
  const std::optional<std::string> program = FindProgram(name);
  if (!program) co_return Status::Error(name + " is not on this daemon's PATH");
  Launch launch;
  launch.argv = std::move(command.argv);
  launch.argv.front() = *program;
  if (Status owned = launcher_.AsOwner(owner, launch); !owned.ok()) co_return owned;
  auto lines = std::make_shared<std::vector<std::string>>();
  auto exit = std::make_shared<std::optional<ProcessExit>>();
  auto done = std::make_shared<asio::steady_timer>(io_, asio::steady_timer::time_point::max());
  Result<pid_t> pid = supervisor_.Spawn(
      launch,
      [lines, on_line = std::move(command.on_line)](std::string_view, std::string_view line) {
        lines->emplace_back(line);
        if (on_line) on_line(line);
      },
      [exit, done](ProcessExit e) {
        *exit = e;
        done->cancel();
      });
  if (!pid.ok()) co_return pid.status();
  if (command.on_start) command.on_start(pid.value());
  if (!exit->has_value()) {
    std::error_code ec;
    co_await done->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  const ProcessExit& ended = exit->value();
  if (ended.signal != 0 || ended.exit_status != 0) {
    const std::string said = lines->empty() ? DescribeExit(ended) : lines->back();
    co_return Status::Error(name + " failed: " + said);
  }
  co_return std::move(*lines);
}

asio::awaitable<Status> JobManager::AllocateOnSlurm(std::int64_t id, std::uint64_t attempt) {
  const auto current = [this, id, attempt] { return Current(id, attempt); };
  const std::string name = SlurmJobName(settings_.node_name, id);
  const Owner owner = jobs_.at(id)->owner;
  // What a previous daemon, killed before it could, left allocated for this job.
  SlurmCommand leftovers{{"scancel", "--quiet", "--name=" + name}, {}, {}};
  co_await RunSlurmCommand(owner, std::move(leftovers));
  Job* job = current();
  if (job == nullptr) co_return Status::Error("the attempt ended");
  if (job->machine.cancel_requested() || shutting_down_) co_return Status::Error("stopped");
  SlurmCommand salloc;
  salloc.argv = SallocArguments(job->config, name, FirstAllocationTasks(job->config));
  salloc.on_line = [this, id, current](std::string_view line) {
    Job* j = current();
    const std::optional<std::int64_t> allocation = AllocationIdIn(line);
    if (j == nullptr || !allocation) return;
    j->slurm.id = *allocation;
    if (!IsGrantLine(line)) {
      const std::string waiting =
          "waiting for Slurm to grant job " + std::to_string(*allocation);
      store_.AppendLog(id, 0, "daemon", waiting);
    }
  };
  salloc.on_start = [current](pid_t pid) {
    if (Job* j = current()) j->slurm.salloc = pid;
  };
  Result<std::vector<std::string>> granted = co_await RunSlurmCommand(owner, std::move(salloc));
  job = current();
  if (job == nullptr) co_return Status::Error("the attempt ended");
  job->slurm.salloc = 0;
  if (!granted.ok()) co_return Status::Error("Slurm did not grant the job: " + granted.status().message());
  if (job->slurm.id == 0) co_return Status::Error("salloc did not say which Slurm job it made");
  co_await NoteSlurmGrant(id, owner, job->slurm.id);
  co_return Status::Ok();
}

asio::awaitable<void> JobManager::NoteSlurmGrant(std::int64_t id, Owner owner,
                                                 std::int64_t allocation,
                                                 std::optional<int> worker) {
  SlurmCommand show{{"scontrol", "--oneliner", "show", "job", std::to_string(allocation)}, {}, {}};
  Result<std::vector<std::string>> shown = co_await RunSlurmCommand(owner, std::move(show));
  std::string nodes = shown.ok() && !shown.value().empty()
                          ? ScontrolField(shown.value().front(), "NodeList")
                          : std::string();
  if (nodes.empty()) nodes = "(nodes unknown)";
  const std::string event = store::SlurmGrantReason({allocation, nodes, worker});
  store_.AppendLog(id, 0, "daemon", event);
  co_await StoreEvent(id, event, /*sets_reason=*/false);
}

asio::awaitable<void> JobManager::EndSlurmAttempt(std::int64_t id, std::uint64_t attempt) {
  Job* job = Current(id, attempt);
  if (job == nullptr) co_return;
  const std::int64_t allocation = job->slurm.id;
  const std::string allocation_id = std::to_string(allocation);
  const Owner owner = job->owner;
  if (allocation != 0 && !job->machine.failure().empty() && !job->machine.cancel_requested() &&
      !shutting_down_) {
    // While Slurm is still ending the allocation on its own (COMPLETING) it may not yet say why:
    // a preempted job shows PREEMPTED only once its tasks are gone. Ask again for a moment.
    std::string state, reason;
    for (int asked = 0; asked < 15; ++asked) {
      SlurmCommand show{{"scontrol", "--oneliner", "show", "job", allocation_id}, {}, {}};
      Result<std::vector<std::string>> shown = co_await RunSlurmCommand(owner, std::move(show));
      if (!shown.ok() || shown.value().empty()) break;
      state = ScontrolField(shown.value().front(), "JobState");
      reason = ScontrolField(shown.value().front(), "Reason");
      if (state != "COMPLETING" || reason != "None") break;
      asio::steady_timer pause(io_, std::chrono::milliseconds(200));
      co_await pause.async_wait(asio::use_awaitable);
    }
    job = Current(id, attempt);
    if (job == nullptr) co_return;
    const std::string why = DescribeSlurmEnd(state, reason, allocation, job->config.slurm);
    if (!why.empty()) {
      job->machine.NameCause(why);
      // The attempt's first failure is an event already; this says what caused it.
      co_await StoreEvent(id, why, /*sets_reason=*/false);
      job = Current(id, attempt);
      if (job == nullptr) co_return;
    }
  }
  // Every allocation of the attempt ends with it: the first, those it grew by and the one its
  // growth still waits for (whose salloc is stopped too, in case Slurm has not named it yet).
  // Nothing waits for them: the next attempt's salloc may be granted the same cores once they ran.
  if (job->slurm.growth_salloc > 0) supervisor_.Stop(job->slurm.growth_salloc, settings_.grace);
  for (const std::int64_t made : job->slurm.All()) {
    asio::co_spawn(io_, CancelSlurmJob(owner, std::to_string(made)), asio::detached);
  }
  job->slurm = Job::SlurmAllocation{};
  job->slurm.ended = true;
}

asio::awaitable<void> JobManager::CancelSlurmJob(Owner owner, std::string allocation) {
  SlurmCommand cancel{{"scancel", "--quiet", std::move(allocation)}, {}, {}};
  co_await RunSlurmCommand(owner, std::move(cancel));
}

Result<Launch> JobManager::SlurmTaskLaunch(const Job& job, const Process& p) const {
  Launch launch;
  launch.argv = {settings_.worker_exe,
                 "slurm-task",
                 "--allocation",
                 std::to_string(job.slurm.Of(p.rank)),
                 "--job",
                 std::to_string(job.id),
                 "--rank",
                 std::to_string(p.rank),
                 "--cpus",
                 std::to_string(SlurmTaskCores(job.config)),
                 "--coordinator",
                 settings_.coordinator};
  if (Status owned = launcher_.AsOwner(job.owner, launch); !owned.ok()) return owned;
  launch.secret = nlohmann::json{{"token", p.token}}.dump();
  return launch;
}

}  // namespace dtrain::server
