#include "cmd/local_job.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>

#include "cmd/cli_error.h"
#include "cmd/exit_codes.h"
#include "cmd/interrupt.h"
#include "cmd/progress.h"
#include "cmd/stored_job.h"
#include "cmd/terminal.h"
#include "config/job_file.h"
#include "config/job_layout.h"
#include "core/net/host_info.h"
#include "daemon/server/embedded_coordinator.h"

namespace dtrain::cli {
namespace {

int ExitCode(store::JobState state) {
  return state == store::JobState::kSucceeded   ? kExitOk
         : state == store::JobState::kCancelled ? kExitInterrupted
                                                : kExitFailed;
}

// The final evaluation of a job whose workers ran in other processes: the last eval points of
// the replica that evaluated furthest (rank 0 in sync modes, where replicas agree; in async the
// one that reached the target, or trained longest).
void FillFinalEval(store::Store& store, std::int64_t job_id, const config::JobConfig& job,
                   runner::RunOutcome* outcome) {
  outcome->classification = job.model.loss != model::LossType::kMeanSquaredError;
  outcome->eval_name = !job.data.test.empty() || job.data.format == config::DataFormat::kSynthetic
                           ? "test"
                       : job.data.validation_fraction > 0 ? "validation"
                                                          : "";
  auto rows = store.Metrics(job_id, "");
  if (!rows.ok()) return;
  struct LastEval {
    std::int64_t step = -1;
    std::int64_t steps = 0;
    std::optional<double> loss, accuracy, auc;
  };
  std::map<int, LastEval> replicas;
  for (const store::MetricRow& m : rows.value()) {
    if (config::RoleOf(job.cluster, m.worker).kind == config::ProcessRole::Kind::kShard) {
      continue;  // a shard's statistics
    }
    LastEval& r = replicas[m.worker];
    r.steps = std::max(r.steps, m.step);
    if (m.name == "eval_loss" || m.name == "eval_mse") r.loss = m.value, r.step = m.step;
    if (m.name == "eval_accuracy") r.accuracy = m.value;
    if (m.name == "eval_auc") r.auc = m.value;
  }
  const LastEval* best = nullptr;
  for (const auto& [rank, r] : replicas) {
    if (best == nullptr || r.step > best->step) best = &r;
  }
  if (best == nullptr) return;
  outcome->steps = std::max(outcome->steps, best->steps);
  if (best->loss) {
    outcome->final_eval = train::EvalResult{*best->loss, best->accuracy.value_or(0.0), 0};
    if (best->auc) outcome->final_eval->auc = *best->auc;
  }
}

// A job of several processes: they run as worker processes of this binary (`dtrain worker`),
// coordinated from here as dtraind would; the lead process's output (rank 0's, or a Sandblaster
// job's coordinator's) is shown as it comes, and every process's errors.
LocalRun RunWithWorkers(const config::JobConfig& job, std::int64_t job_id, store::Store& store,
                        const LocalRunOptions& run) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    PrintError("cannot find this program to start the workers: " + ec.message());
    return {kExitFailed, std::nullopt};
  }
  InstallStopHandlers();
  const auto start = std::chrono::steady_clock::now();
  server::EmbeddedOptions options;
  options.worker_exe = self.string();
  options.stop = StopFlag();
  const int lead = config::LeadRank(job.cluster);
  options.on_line = [json = run.quiet, lead](int rank, std::string_view stream,
                                             std::string_view line) {
    if (json || (rank != lead && stream == "stdout")) return;
    std::fprintf(stream == "stdout" ? stdout : stderr, "r%d: %.*s\n", rank,  // as dtrain logs
                 static_cast<int>(line.size()), line.data());
  };
  Result<store::JobState> ended = server::RunJobWithWorkers(job_id, store, options);
  if (!ended.ok()) {
    PrintError("job " + std::to_string(job_id) + ": " + ended.status().message());
    return {kExitFailed, std::nullopt};
  }
  runner::RunOutcome outcome;
  outcome.state = ended.value();
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (auto record = store.GetJob(job_id); record.ok()) outcome.reason = record.value().reason;
  if (outcome.state == store::JobState::kCancelled) {
    outcome.reason += "; resume with " + ResumeCommand(run.db, job_id);
  }
  FillFinalEval(store, job_id, job, &outcome);
  return {ExitCode(outcome.state), outcome};
}

}  // namespace

Result<std::int64_t> CreateLocalJob(store::Store& store, const config::JobConfig& job) {
  store::JobRecord record;
  record.name = job.name;
  record.owner_uid = static_cast<std::int64_t>(::getuid());
  record.spec_toml = config::FormatResolvedJob(job);
  record.tags = job.tags;
  return store.CreateJob(record);
}

LocalRun RunLocalJob(const config::JobConfig& job, std::int64_t job_id, store::Store& store,
                     const LocalRunOptions& run) {
  if (job.cluster.Processes() > 1) return RunWithWorkers(job, job_id, store, run);
  auto worker = store.RecordWorkerStart(job_id, 0, "replica", net::LocalHostName(), ::getpid());
  if (!worker.ok()) {
    PrintError(worker.status().message());
    return {kExitFailed, std::nullopt};
  }
  InstallStopHandlers(StopSignalsOn::kOffComputeThreads);
  ProgressPrinter progress(run.quiet);
  runner::RunOptions options;
  options.stop = StopFlag();
  options.observer = &progress;
  options.resume_command = ResumeCommand(run.db, job_id);
  auto outcome = runner::RunJobInProcess(job, job_id, store, options);
  progress.Finish();
  const int code = outcome.ok() ? ExitCode(outcome.value().state) : kExitFailed;
  Status exited = store.RecordWorkerExit(worker.value(), code, 0);
  if (!outcome.ok()) {
    PrintError("job " + std::to_string(job_id) + ": " + outcome.status().message());
    return {kExitFailed, std::nullopt};
  }
  if (!exited.ok()) PrintError(exited.message());
  return {code, std::move(outcome.value())};
}

std::string ResumeCommand(const std::string& db, std::int64_t job_id) {
  std::string command = "dtrain run --resume " + std::to_string(job_id);
  if (db != kDefaultDb) command += " --db " + db;
  return command;
}

}  // namespace dtrain::cli
