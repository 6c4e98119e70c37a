#include "daemon/server/sweep_driver.h"

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <utility>

#include "config/job_file.h"
#include "config/tags_key.h"
#include "core/net/host_info.h"
#include "daemon/server/async.h"

namespace dtrain::server {
namespace {

using json = nlohmann::json;
using store::SweepState;

// The trial's job file: its resolved job, tagged with its sweep.
std::string TrialJobText(config::JobConfig job, std::int64_t sweep) {
  const std::string tag = "sweep-" + std::to_string(sweep);
  std::vector<std::string> tags = job.tags;
  if (config::AddTags(std::span(&tag, 1), &tags).empty()) job.tags = std::move(tags);
  return config::FormatResolvedJob(job);
}

std::string TrialName(const config::ResolvedTrial& t) {
  return "trial " + std::to_string(t.trial.index) + " (" + config::TrialLabel(t.trial) + ")";
}

}  // namespace

std::string TrialParametersJson(const config::Trial& trial) {
  json out = json::array();
  for (const config::TrialParameter& p : trial.parameters) {
    out.push_back(
        {{"key", p.key}, {"toml", p.value.toml}, {"json", p.value.json}, {"shown", p.value.shown}});
  }
  return out.dump();
}

SweepDriver::SweepDriver(asio::io_context& io, asio::thread_pool& pool, store::Store& store,
                         JobManager& jobs)
    : io_(io), pool_(pool), store_(store), jobs_(jobs) {}

SweepDriver::~SweepDriver() = default;

asio::awaitable<Status> SweepDriver::Start() {
  auto sweeps = co_await OffThread(pool_, [this] { return store_.ListSweeps(); });
  if (!sweeps.ok()) co_return sweeps.status();
  for (const store::SweepRecord& s : sweeps.value()) {
    if (s.state == SweepState::kRunning) running_.insert(s.id);
    if (s.state == SweepState::kCancelled) co_await CancelTrials(s.id, 0);
  }
  Kick();
  co_return Status::Ok();
}

asio::awaitable<Result<std::shared_ptr<const config::SweepLoadResult>>> SweepDriver::Trials(
    const store::SweepRecord& sweep) {
  if (auto it = loaded_.find(sweep.id); it != loaded_.end()) co_return it->second;
  auto load = [&sweep] {
    return config::ParseSubmittedSweep(
        sweep.sweep_toml, sweep.job_toml, sweep.source, sweep.base_dir,
        {config::DataFiles::kUnchecked, net::PhysicalMemory(), true});
  };
  config::SweepLoadResult parsed = co_await OffThread(pool_, load);
  auto loaded = std::make_shared<const config::SweepLoadResult>(std::move(parsed));
  if (!loaded->ok()) {
    co_return Status::Error("its sweep file no longer validates: " +
                            config::FormatDiagnostic(loaded->diagnostics.front()));
  }
  loaded_[sweep.id] = loaded;
  co_return loaded;
}

asio::awaitable<SubmittedSweep> SweepDriver::Submit(SweepSubmission submission, Owner owner) {
  SubmittedSweep out;
  if (submission.sweep_toml.size() > kMaxSweepText || submission.job_toml.size() > kMaxSweepText) {
    out.refusal =
        Refusal{"invalid_job",
                submission.source + ": a sweep file or its base job file is larger than " +
                    std::to_string(kMaxSweepText) + " bytes",
                {}};
    co_return out;
  }
  if (!std::filesystem::path(submission.base_dir).is_absolute()) {
    out.refusal =
        Refusal{"bad_request", "sweep_submit's \"base_dir\" must be an absolute path", {}};
    co_return out;
  }
  auto load = [&submission] {
    return config::ParseSubmittedSweep(
        submission.sweep_toml, submission.job_toml, submission.source, submission.base_dir,
        {config::DataFiles::kUnchecked, net::PhysicalMemory(), true});
  };
  config::SweepLoadResult parsed = co_await OffThread(pool_, load);
  auto loaded = std::make_shared<const config::SweepLoadResult>(std::move(parsed));
  if (!loaded->ok()) {
    out.refusal = Refusal{"invalid_job", submission.source + " is not a valid sweep file",
                          loaded->diagnostics};
    co_return out;
  }
  const config::SweepSpec& spec = *loaded->sweep;
  // Every trial as its job will be submitted: a sweep is refused whole or runs whole.
  const std::optional<std::string> no_name;
  const std::optional<int> no_priority;
  for (const config::ResolvedTrial& t : loaded->trials) {
    const std::string text = config::FormatResolvedJob(t.job);
    const std::string source = submission.source + " " + TrialName(t);
    CheckedJob checked = co_await jobs_.CheckSubmission(text, source, owner, no_name, no_priority);
    if (checked.refusal) {
      out.refusal = std::move(checked.refusal);
      co_return out;
    }
  }
  store::SweepRecord record;
  record.name = std::filesystem::path(submission.source).stem().string();
  record.owner_uid = owner.uid;
  record.owner_gid = owner.gid;
  record.source = submission.source;
  record.sweep_toml = submission.sweep_toml;
  record.job_toml = submission.job_toml;
  record.base_dir = submission.base_dir;
  record.method = config::SweepMethodName(spec.method);
  record.metric = spec.metric;
  record.goal = config::SweepGoalName(spec.goal);
  record.trials = static_cast<std::int64_t>(loaded->trials.size());
  record.max_concurrent = spec.max_concurrent;
  auto create = [this, record] { return store_.CreateSweep(record); };
  auto created = co_await OffThread(pool_, create);
  if (!created.ok()) {
    out.refusal = Refusal{"internal", created.status().message(), {}};
    co_return out;
  }
  out.id = created.value();
  loaded_[out.id] = loaded;
  running_.insert(out.id);
  Kick();
  co_return out;
}

asio::awaitable<std::optional<Refusal>> SweepDriver::Cancel(std::int64_t id, uid_t caller) {
  auto record = co_await OffThread(pool_, [this, id] { return store_.GetSweep(id); });
  if (!record.ok()) co_return Refusal{"not_found", "no sweep " + std::to_string(id), {}};
  if (caller != 0 && static_cast<std::int64_t>(caller) != record.value().owner_uid) {
    co_return Refusal{"denied",
                      "sweep " + std::to_string(id) + " belongs to uid " +
                          std::to_string(record.value().owner_uid) +
                          "; only its owner or root may cancel it",
                      {}};
  }
  const std::string reason = "cancelled by uid " + std::to_string(caller);
  auto cancel = [this, id, reason] {
    return store_.SetSweepState(id, SweepState::kCancelled, reason);
  };
  if (Status s = co_await OffThread(pool_, cancel); !s.ok()) {
    co_return Refusal{"conflict", s.message(), {}};
  }
  running_.erase(id);
  co_await CancelTrials(id, caller);
  co_return std::nullopt;
}

asio::awaitable<void> SweepDriver::CancelTrials(std::int64_t id, uid_t caller) {
  auto rows = co_await OffThread(pool_, [this, id] { return store_.SweepTrials(id); });
  if (!rows.ok()) co_return;
  for (const store::SweepTrialRecord& row : rows.value()) {
    if (row.job && jobs_.Active(*row.job)) {
      const std::optional<Refusal> refused = co_await jobs_.Cancel(*row.job, caller);
      (void)refused;  // ended meanwhile
    }
  }
}

void SweepDriver::Kick() {
  if (driving_) {
    again_ = true;
    return;
  }
  driving_ = true;
  asio::co_spawn(io_, Drive(), asio::detached);
}

asio::awaitable<void> SweepDriver::Drive() {
  do {
    again_ = false;
    const std::vector<std::int64_t> ids(running_.begin(), running_.end());
    for (const std::int64_t id : ids) {
      if (running_.count(id) != 0) co_await Advance(id);
    }
  } while (again_);
  driving_ = false;
}

asio::awaitable<void> SweepDriver::Advance(std::int64_t id) {
  auto record = co_await OffThread(pool_, [this, id] { return store_.GetSweep(id); });
  if (!record.ok() || record.value().state != SweepState::kRunning) {
    running_.erase(id);
    co_return;
  }
  const store::SweepRecord& sweep = record.value();
  Result<std::shared_ptr<const config::SweepLoadResult>> loaded = co_await Trials(sweep);
  if (!loaded.ok()) {
    co_await FailSweep(id, "it cannot go on: " + loaded.status().message());
    co_return;
  }
  const config::SweepLoadResult& trials = *loaded.value();
  const config::SweepSpec& spec = *trials.sweep;
  auto rows = co_await OffThread(pool_, [this, id] { return store_.SweepTrials(id); });
  if (!rows.ok()) co_return;  // tried again at the next pass
  std::optional<std::vector<TrialStanding>> standings =
      co_await Standings(sweep, trials, rows.value(), false);
  if (!standings) co_return;
  co_await NoteRungs(spec, *standings, false);
  std::int64_t active = 0;
  for (const TrialStanding& t : *standings) active += t.running ? 1 : 0;
  for (;;) {
    const config::AshaAction next = NextSweepAction(spec, sweep.trials, *standings);
    if (next.kind == config::AshaAction::Kind::kDone) {
      co_await EndSweep(sweep, trials, rows.value());
      co_return;
    }
    if (next.kind == config::AshaAction::Kind::kWait || active >= sweep.max_concurrent) co_return;
    if (next.kind == config::AshaAction::Kind::kStart) {
      if (!co_await StartTrial(sweep, trials, next.trial)) co_return;
      TrialStanding started;
      started.trial = next.trial;
      started.running = started.asha.running = true;
      standings->insert(standings->begin() + next.trial, std::move(started));
    } else {
      TrialStanding& promoted = (*standings)[static_cast<std::size_t>(next.trial)];
      if (!co_await PromoteTrial(sweep, promoted, next)) co_return;
      promoted.running = promoted.asha.running = true;
    }
    ++active;
  }
}

asio::awaitable<std::optional<std::vector<TrialStanding>>> SweepDriver::Standings(
    const store::SweepRecord& sweep, const config::SweepLoadResult& loaded,
    const std::vector<store::SweepTrialRecord>& rows, bool full) {
  std::vector<TrialStanding> standings;
  if (full || loaded.sweep->method == config::SweepMethod::kAsha) {
    auto read = [this, &sweep, &loaded, &rows] {
      return ReadStandings(store_, sweep, &loaded, rows, &standings_);
    };
    Result<std::vector<TrialStanding>> stored = co_await OffThread(pool_, read);
    if (!stored.ok()) co_return std::nullopt;
    standings = std::move(stored).value();
  } else {  // grid and random look only at which trials run
    for (const store::SweepTrialRecord& row : rows) {
      TrialStanding t;
      t.trial = row.trial;
      t.job = row.job;
      standings.push_back(std::move(t));
    }
  }
  // A job ending is recorded in the store just before the JobManager lets it go: until then it
  // still counts as running.
  for (TrialStanding& t : standings) {
    if (t.job && jobs_.Active(*t.job)) {
      t.running = t.asha.running = true;
      t.asha.ended = false;
    }
  }
  co_return standings;
}

asio::awaitable<bool> SweepDriver::StartTrial(const store::SweepRecord& sweep,
                                              const config::SweepLoadResult& loaded,
                                              std::int64_t index) {
  std::string failure;
  if (index >= static_cast<std::int64_t>(loaded.trials.size())) {
    failure = "it has " + std::to_string(loaded.trials.size()) + " trials, not " +
              std::to_string(sweep.trials);
  } else {
    const config::ResolvedTrial& t = loaded.trials[static_cast<std::size_t>(index)];
    const std::string text = TrialJobText(t.job, sweep.id);
    const std::string source = sweep.source + " " + TrialName(t);
    const Owner owner{static_cast<uid_t>(sweep.owner_uid), static_cast<gid_t>(sweep.owner_gid)};
    const std::optional<std::string> no_name;
    const std::optional<int> no_priority;
    const std::optional<store::SweepTrialRecord> row =
        store::SweepTrialRecord{sweep.id, index, {}, TrialParametersJson(t.trial)};
    Submitted s = co_await jobs_.Submit(text, source, owner, no_name, no_priority, row);
    if (!s.refusal) {
      // Cancelled while the job was being created: its cancellation may have missed it.
      if (running_.count(sweep.id) == 0) {
        const std::optional<Refusal> refused = co_await jobs_.Cancel(s.id, 0);
        (void)refused;
      }
      co_return true;
    }
    if (s.refusal->code == "conflict" || s.refusal->code == "internal") {
      co_return false;  // the daemon stops, or the store refused: the next pass (or start) retries
    }
    failure = TrialName(t) + ": " + s.refusal->message;
  }
  co_await FailSweep(sweep.id, "trial " + std::to_string(index) + " cannot start: " + failure);
  co_return false;
}

asio::awaitable<bool> SweepDriver::PromoteTrial(const store::SweepRecord& sweep,
                                                const TrialStanding& trial,
                                                const config::AshaAction& promotion) {
  const std::int64_t job = trial.job.value_or(0);
  const std::optional<Refusal> refused =
      co_await jobs_.Continue(job, config::AshaRungOverrides(promotion.steps),
                              config::AshaPromotedReason(promotion.rung, promotion.steps));
  if (!refused) {
    // Cancelled while the job was being queued: its cancellation may have missed it.
    if (running_.count(sweep.id) == 0) {
      const std::optional<Refusal> cancelled = co_await jobs_.Cancel(job, 0);
      (void)cancelled;
    }
    co_return true;
  }
  if (refused->code == "conflict" || refused->code == "internal") {
    co_return false;  // the daemon stops, or the store refused: the next pass (or start) retries
  }
  co_await FailSweep(sweep.id, "trial " + std::to_string(trial.trial) +
                                   " cannot be promoted to rung " + std::to_string(promotion.rung) +
                                   ": " + refused->message);
  co_return false;
}

asio::awaitable<void> SweepDriver::NoteRungs(const config::SweepSpec& spec,
                                             const std::vector<TrialStanding>& standings,
                                             bool ended) {
  if (spec.method != config::SweepMethod::kAsha) co_return;
  const std::vector<std::int64_t> rungs = config::AshaRungs(spec.asha);
  const int last = static_cast<int>(rungs.size()) - 1;
  for (const TrialStanding& t : standings) {
    if (!t.job || t.running || t.asha.ended || t.rung < 0 || t.rung == last) continue;
    const std::string reason =
        ended ? config::AshaStoppedReason(spec.asha, t.rung)
              : config::AshaPausedReason(t.rung, rungs[static_cast<std::size_t>(t.rung)]);
    if (t.reason == reason) continue;
    const std::int64_t job = *t.job;
    co_await OffThread(pool_, [this, job, &reason] { return store_.NoteReason(job, reason); });
  }
}

asio::awaitable<void> SweepDriver::EndSweep(const store::SweepRecord& sweep,
                                            const config::SweepLoadResult& loaded,
                                            const std::vector<store::SweepTrialRecord>& rows) {
  std::optional<std::vector<TrialStanding>> standings =
      co_await Standings(sweep, loaded, rows, true);
  if (!standings) co_return;  // tried again at the next pass
  // The trials left paused at a rung go no further: said before the sweep ends, so that a
  // daemon killed in between says it again at its next start.
  co_await NoteRungs(*loaded.sweep, *standings, true);
  std::map<std::string, std::int64_t> ends;  // job state -> trials
  for (const TrialStanding& t : *standings) ++ends[t.state];
  std::string reason = std::to_string(standings->size()) + " trials ended:";
  for (const auto& [state, count] : ends) reason += " " + std::to_string(count) + " " + state + ",";
  reason.pop_back();
  const SweepState end =
      ends.count("succeeded") != 0 ? SweepState::kSucceeded : SweepState::kFailed;
  const std::int64_t id = sweep.id;
  auto finish = [this, id, end, reason] { return store_.SetSweepState(id, end, reason); };
  co_await OffThread(pool_, finish);
  running_.erase(id);
  loaded_.erase(id);
}

asio::awaitable<void> SweepDriver::FailSweep(std::int64_t id, const std::string& reason) {
  auto fail = [this, id, reason] { return store_.SetSweepState(id, SweepState::kFailed, reason); };
  co_await OffThread(pool_, fail);
  running_.erase(id);
}

}  // namespace dtrain::server
