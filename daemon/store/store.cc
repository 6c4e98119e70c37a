#include "daemon/store/store.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>
#include <utility>

#include "core/train/early_stopping.h"
#include "daemon/store/schema.h"
#include "daemon/store/sqlite.h"
#include "daemon/store/writer.h"

namespace dtrain::store {
namespace {

// How long a connection waits for a lock held by another connection before failing. Only the
// writer takes write locks, so this covers WAL checkpoints and a second process on the file.
constexpr std::string_view kBusyTimeout = "PRAGMA busy_timeout = 10000";
constexpr auto kSetUpPatience = std::chrono::seconds(10);

std::string JobName(std::int64_t job) { return "job " + std::to_string(job); }

std::string CheckpointName(std::int64_t job, std::int64_t step) {
  return "checkpoint of job " + std::to_string(job) + " at step " + std::to_string(step);
}

Status WithPath(const std::string& path, const Status& status) {
  return Status::Error(path + ": " + status.message());
}

// The write connection: WAL so readers never block the writer nor it them; FULL so that a
// commit is on disk when it returns; foreign keys so rows cannot name a missing job;
// incremental vacuum in a new file.
Status ConfigureWriter(Database& db) {
  if (Status s = db.Exec(kBusyTimeout); !s.ok()) return s;
  // Takes effect in a new file only, before WAL mode writes its first page: deletions can then
  // be given back bit by bit (Reclaim). An older file keeps its mode until Reclaim rewrites it.
  if (Status s = db.Exec("PRAGMA auto_vacuum = INCREMENTAL"); !s.ok()) return s;
  Result<std::string> mode = db.QueryText("PRAGMA journal_mode = WAL");
  if (!mode.ok()) return mode.status();
  if (mode.value() != "wal") {
    return Status::Error("cannot switch to WAL mode (the journal mode stays '" + mode.value() +
                         "')");
  }
  return db.Exec("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON");
}

// The writer's settings and the schema's migrations. Other processes may be opening a new file
// at the same moment (`dtrain run` creating its store while `dtrain status --db` looks): SQLite
// then refuses some of the setup's lock changes at once ("database is locked", the WAL switch
// left undone) instead of waiting, so the setup is tried again, for as long as a busy wait would.
Status SetUpWriter(Database& db) {
  const auto give_up = std::chrono::steady_clock::now() + kSetUpPatience;
  for (;;) {
    Status s = ConfigureWriter(db);
    if (s.ok()) s = Migrate(db, StoreMigrations());
    const bool contended = s.message().find("database is locked") != std::string::npos ||
                           s.message().find("cannot switch to WAL mode") != std::string::npos;
    if (s.ok() || !contended || std::chrono::steady_clock::now() >= give_up) {
      return s.ok() || s.message().starts_with(db.path()) ? s : WithPath(db.path(), s);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Result<Database> OpenReader(const std::string& path) {
  Result<Database> db = Database::Open(path, Database::kExisting);
  if (!db.ok()) return db;
  Status s = db.value().Exec(std::string(kBusyTimeout) + "; PRAGMA query_only = ON");
  if (!s.ok()) return WithPath(path, s);
  return db;
}

// Runs a query on a lent read connection: bind(statement) sets its parameters, parse(statement)
// turns each row into a Row (or an error for a row it cannot read).
template <typename Row, typename Bind, typename Parse>
Result<std::vector<Row>> QueryRows(ConnectionPool& pool, std::string_view sql, const Bind& bind,
                                   const Parse& parse) {
  Result<ConnectionPool::Lease> lease = pool.Acquire();
  if (!lease.ok()) return lease.status();
  Database& db = *lease.value();
  Result<Statement> statement = db.Prepare(sql);
  if (!statement.ok()) return WithPath(db.path(), statement.status());
  Statement& s = statement.value();
  bind(s);
  std::vector<Row> rows;
  for (;;) {
    Result<bool> row = s.Step();
    if (!row.ok()) return WithPath(db.path(), row.status());
    if (!row.value()) return rows;
    Result<Row> parsed = parse(s);
    if (!parsed.ok()) return parsed.status();
    rows.push_back(std::move(parsed).value());
  }
}

constexpr std::string_view kJobColumns =
    "id, name, owner_uid, state, priority, spec_toml, created, updated, reason, owner_gid";

Result<JobRecord> ParseJob(const Statement& s) {
  JobRecord job;
  job.id = s.ColumnInt(0);
  job.name = s.ColumnText(1);
  job.owner_uid = s.ColumnInt(2);
  Result<JobState> state = ParseJobState(s.ColumnText(3));
  if (!state.ok()) return Status::Error(JobName(job.id) + ": " + state.status().message());
  job.state = state.value();
  job.priority = static_cast<int>(s.ColumnInt(4));
  job.spec_toml = s.ColumnText(5);
  job.created = s.ColumnDouble(6);
  job.updated = s.ColumnDouble(7);
  job.reason = s.ColumnText(8);
  job.owner_gid = s.ColumnInt(9);
  return job;
}

// The job's current state, read inside the writer's transaction; an error if there is no such
// job.
Result<JobState> CurrentState(Database& db, std::int64_t job) {
  Result<Statement> select = db.Prepare("SELECT state FROM jobs WHERE id = ?1");
  if (!select.ok()) return select.status();
  select.value().BindInt(1, job);
  Result<bool> row = select.value().Step();
  if (!row.ok()) return row.status();
  if (!row.value()) return Status::Error("no " + JobName(job));
  return ParseJobState(select.value().ColumnText(0));
}

Status InsertEvent(Database& db, std::int64_t job, double time, std::optional<JobState> from,
                   JobState to, std::string_view reason) {
  Result<Statement> insert = db.Prepare(
      "INSERT INTO events (job, time, from_state, to_state, reason) VALUES (?1, ?2, ?3, ?4, ?5)");
  if (!insert.ok()) return insert.status();
  Statement& s = insert.value();
  s.BindInt(1, job).BindDouble(2, time).BindText(4, JobStateName(to)).BindText(5, reason);
  if (from.has_value()) {
    s.BindText(3, JobStateName(*from));
  } else {
    s.BindNull(3);
  }
  return s.Run();
}

// Inserts `job` queued, with its tags and its 'submitted' event, inside the writer's
// transaction; returns its id.
Result<std::int64_t> InsertJob(Database& db, const JobRecord& job, double now) {
  constexpr std::string_view kReason = "submitted";
  Result<Statement> insert = db.Prepare(
      "INSERT INTO jobs (name, owner_uid, state, priority, spec_toml, created, updated, reason,"
      " owner_gid) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8)");
  if (!insert.ok()) return insert.status();
  insert.value()
      .BindText(1, job.name)
      .BindInt(2, job.owner_uid)
      .BindText(3, JobStateName(JobState::kQueued))
      .BindInt(4, job.priority)
      .BindText(5, job.spec_toml)
      .BindDouble(6, now)
      .BindText(7, kReason)
      .BindInt(8, job.owner_gid);
  if (Status s = insert.value().Run(); !s.ok()) return s;
  const std::int64_t id = db.LastInsertRowId();
  for (std::size_t i = 0; i < job.tags.size(); ++i) {
    Result<Statement> tag =
        db.Prepare("INSERT INTO job_tags (job, position, tag) VALUES (?1, ?2, ?3)");
    if (!tag.ok()) return tag.status();
    tag.value().BindInt(1, id).BindInt(2, static_cast<std::int64_t>(i)).BindText(3, job.tags[i]);
    if (Status s = tag.value().Run(); !s.ok()) return s;
  }
  if (Status s = InsertEvent(db, id, now, std::nullopt, JobState::kQueued, kReason); !s.ok()) {
    return s;
  }
  return id;
}

constexpr std::string_view kSweepColumns =
    "id, name, owner_uid, owner_gid, source, sweep_toml, job_toml, base_dir, method, metric, "
    "goal, trials, max_concurrent, state, created, updated, reason";

Result<SweepRecord> ParseSweep(const Statement& s) {
  SweepRecord sweep;
  sweep.id = s.ColumnInt(0);
  sweep.name = s.ColumnText(1);
  sweep.owner_uid = s.ColumnInt(2);
  sweep.owner_gid = s.ColumnInt(3);
  sweep.source = s.ColumnText(4);
  sweep.sweep_toml = s.ColumnText(5);
  sweep.job_toml = s.ColumnText(6);
  sweep.base_dir = s.ColumnText(7);
  sweep.method = s.ColumnText(8);
  sweep.metric = s.ColumnText(9);
  sweep.goal = s.ColumnText(10);
  sweep.trials = s.ColumnInt(11);
  sweep.max_concurrent = s.ColumnInt(12);
  Result<SweepState> state = ParseSweepState(s.ColumnText(13));
  if (!state.ok()) {
    return Status::Error("sweep " + std::to_string(sweep.id) + ": " + state.status().message());
  }
  sweep.state = state.value();
  sweep.created = s.ColumnDouble(14);
  sweep.updated = s.ColumnDouble(15);
  sweep.reason = s.ColumnText(16);
  return sweep;
}

// The sweep's state, read inside the writer's transaction; an error if there is no such sweep.
Result<SweepState> CurrentSweepState(Database& db, std::int64_t sweep) {
  Result<Statement> select = db.Prepare("SELECT state FROM sweeps WHERE id = ?1");
  if (!select.ok()) return select.status();
  select.value().BindInt(1, sweep);
  Result<bool> row = select.value().Step();
  if (!row.ok()) return row.status();
  if (!row.value()) return Status::Error("no sweep " + std::to_string(sweep));
  return ParseSweepState(select.value().ColumnText(0));
}

// Decodes a stored checkpoint and checks it against its row: the checksum column and the step.
Result<CheckpointData> VerifyCheckpoint(std::int64_t job, std::int64_t step,
                                        std::int64_t checksum_column, std::string_view blob) {
  const std::string context = CheckpointName(job, step) + ": ";
  Result<CheckpointData> data = DecodeCheckpoint(blob);
  if (!data.ok()) return Status::Error(context + data.status().message());
  const std::uint32_t checksum = *StoredChecksum(blob);
  if (checksum_column != static_cast<std::int64_t>(checksum)) {
    return Status::Error(context + "the checksum column says " +
                         FormatChecksum(static_cast<std::uint32_t>(checksum_column)) +
                         " but the blob's checksum is " + FormatChecksum(checksum));
  }
  if (data.value().step != step) {
    return Status::Error(context + "the blob holds step " + std::to_string(data.value().step));
  }
  return data;
}

Result<MetricRow> ReadMetricRow(const Statement& s) {
  // SQLite keeps a NaN as NULL (a loss that diverged): read back as NaN.
  return MetricRow{s.ColumnInt(0),
                   static_cast<int>(s.ColumnInt(1)),
                   std::string(s.ColumnText(2)),
                   s.ColumnIsNull(3) ? std::numeric_limits<double>::quiet_NaN() : s.ColumnDouble(3),
                   s.ColumnDouble(4),
                   s.ColumnDouble(5)};
}

// Sets the tags of `jobs` (ordered by id) from job_tags: of the one job `only`, or of all (0).
// The tags of a job never change, so reading them apart from its row is consistent.
Status FillTags(ConnectionPool& pool, std::int64_t only, std::vector<JobRecord>& jobs) {
  struct Tag {
    std::int64_t job;
    std::string tag;
  };
  Result<std::vector<Tag>> tags = QueryRows<Tag>(
      pool,
      only > 0 ? "SELECT job, tag FROM job_tags WHERE job = ?1 ORDER BY position"
               : "SELECT job, tag FROM job_tags ORDER BY job, position",
      [&](Statement& s) {
        if (only > 0) s.BindInt(1, only);
      },
      [](const Statement& s) -> Result<Tag> {
        return Tag{s.ColumnInt(0), std::string(s.ColumnText(1))};
      });
  if (!tags.ok()) return tags.status();
  auto job = jobs.begin();
  for (Tag& t : tags.value()) {
    while (job != jobs.end() && job->id < t.job) ++job;
    if (job != jobs.end() && job->id == t.job) job->tags.push_back(std::move(t.tag));
  }
  return Status::Ok();
}

}  // namespace

double WallClock() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Store::Store(std::unique_ptr<ConnectionPool> readers, std::unique_ptr<Writer> writer)
    : readers_(std::move(readers)), writer_(std::move(writer)) {}

Store::~Store() = default;

Result<std::unique_ptr<Store>> Store::Open(const std::string& path, const StoreOptions& options) {
  Result<Database> db = Database::Open(path, Database::kCreate);
  if (!db.ok()) return db.status();
  Status set_up = SetUpWriter(db.value());
  // A daemon that died on a full disk left its reserve behind, and opening the file again (SQLite
  // rebuilds the WAL's index) needs space: give the reserve back and try once more.
  if (!set_up.ok() && IsDiskFull(db.value().ErrorCode()) && options.reserve_bytes > 0) {
    SpaceReserve left(path + "-reserve", options.reserve_bytes);
    if (left.Make() && left.Release()) set_up = SetUpWriter(db.value());
  }
  if (!set_up.ok()) return set_up;
  Result<std::unique_ptr<Writer>> writer =
      Writer::Start(std::move(db).value(), SpaceReserve(path + "-reserve", options.reserve_bytes));
  if (!writer.ok()) return WithPath(path, writer.status());
  auto readers = std::make_unique<ConnectionPool>([path] { return OpenReader(path); });
  // Open the first reader now, so that a file readers cannot use is refused here.
  if (Result<ConnectionPool::Lease> first = readers->Acquire(); !first.ok()) {
    return first.status();
  }
  return std::unique_ptr<Store>(new Store(std::move(readers), std::move(writer).value()));
}

// --- jobs ---

Result<std::int64_t> Store::CreateJob(const JobRecord& job) {
  const double now = WallClock();
  std::int64_t id = 0;
  Status status = writer_->Execute([&](Database& db) -> Status {
    Result<std::int64_t> inserted = InsertJob(db, job, now);
    if (!inserted.ok()) return inserted.status();
    id = inserted.value();
    return Status::Ok();
  });
  if (!status.ok())
    return Status::Error("cannot create job '" + job.name + "': " + status.message());
  return id;
}

namespace {

// SetJobState's body, in the caller's transaction.
Status MoveJob(Database& db, std::int64_t job, JobState to, const std::string& reason, double now) {
  Result<JobState> from = CurrentState(db, job);
  if (!from.ok()) return from.status();
  if (!IsValidTransition(from.value(), to)) {
    return Status::Error("cannot go from " + std::string(JobStateName(from.value())) + " to " +
                         std::string(JobStateName(to)));
  }
  Result<Statement> update =
      db.Prepare("UPDATE jobs SET state = ?2, updated = ?3, reason = ?4 WHERE id = ?1");
  if (!update.ok()) return update.status();
  update.value()
      .BindInt(1, job)
      .BindText(2, JobStateName(to))
      .BindDouble(3, now)
      .BindText(4, reason);
  if (Status s = update.value().Run(); !s.ok()) return s;
  return InsertEvent(db, job, now, from.value(), to, reason);
}

// SetJobSpec's body, in the caller's transaction.
Status ReplaceSpec(Database& db, std::int64_t job, const std::string& spec_toml,
                   const std::string& reason, double now) {
  Result<JobState> state = CurrentState(db, job);
  if (!state.ok()) return state.status();
  Result<Statement> update =
      db.Prepare("UPDATE jobs SET spec_toml = ?2, updated = ?3 WHERE id = ?1");
  if (!update.ok()) return update.status();
  update.value().BindInt(1, job).BindText(2, spec_toml).BindDouble(3, now);
  if (Status s = update.value().Run(); !s.ok()) return s;
  return InsertEvent(db, job, now, state.value(), state.value(), reason);
}

}  // namespace

Status Store::SetJobState(std::int64_t job, JobState to, const std::string& reason,
                          std::optional<double> at) {
  const double now = at.value_or(WallClock());
  Status status = writer_->Execute([&](Database& db) { return MoveJob(db, job, to, reason, now); });
  if (!status.ok()) return Status::Error(status.code(), JobName(job) + ": " + status.message());
  return status;
}

Status Store::RequeueJob(std::int64_t job, const std::string& reason, const std::string& spec_toml,
                         const std::string& spec_reason) {
  const double now = WallClock();
  Status status = writer_->Execute([&](Database& db) -> Status {
    Result<JobState> from = CurrentState(db, job);
    if (!from.ok()) return from.status();
    if (!IsTerminal(from.value())) {
      return Status::Error("it is " + std::string(JobStateName(from.value())) + ", not ended");
    }
    if (!spec_toml.empty()) {
      if (Status s = ReplaceSpec(db, job, spec_toml, spec_reason, now); !s.ok()) return s;
    }
    return MoveJob(db, job, JobState::kQueued, reason, now);
  });
  if (!status.ok()) return Status::Error(JobName(job) + ": " + status.message());
  return status;
}

Status Store::NoteEvent(std::int64_t job, const std::string& reason, std::optional<double> at) {
  return NoteEventIn(job, reason, false, at);
}

Status Store::NoteReason(std::int64_t job, const std::string& reason, std::optional<double> at) {
  return NoteEventIn(job, reason, true, at);
}

Status Store::NoteEventIn(std::int64_t job, const std::string& reason, bool as_reason,
                          std::optional<double> at) {
  const double now = at.value_or(WallClock());
  Status status = writer_->Execute([&](Database& db) -> Status {
    Result<JobState> state = CurrentState(db, job);
    if (!state.ok()) return state.status();
    if (as_reason) {
      Result<Statement> update =
          db.Prepare("UPDATE jobs SET updated = ?2, reason = ?3 WHERE id = ?1");
      if (!update.ok()) return update.status();
      update.value().BindInt(1, job).BindDouble(2, now).BindText(3, reason);
      if (Status s = update.value().Run(); !s.ok()) return s;
    }
    return InsertEvent(db, job, now, state.value(), state.value(), reason);
  });
  if (!status.ok()) return Status::Error(status.code(), JobName(job) + ": " + status.message());
  return status;
}

Result<JobRecord> Store::GetJob(std::int64_t job) {
  Result<std::vector<JobRecord>> rows = QueryRows<JobRecord>(
      *readers_, "SELECT " + std::string(kJobColumns) + " FROM jobs WHERE id = ?1",
      [&](Statement& s) { s.BindInt(1, job); }, ParseJob);
  if (!rows.ok()) return rows.status();
  if (rows.value().empty()) return Status::Error("no " + JobName(job));
  if (Status s = FillTags(*readers_, job, rows.value()); !s.ok()) return s;
  return std::move(rows.value().front());
}

Status Store::SetJobSpec(std::int64_t job, const std::string& spec_toml,
                         const std::string& reason) {
  const double now = WallClock();
  Status status =
      writer_->Execute([&](Database& db) { return ReplaceSpec(db, job, spec_toml, reason, now); });
  if (!status.ok()) return Status::Error(JobName(job) + ": " + status.message());
  return status;
}

Result<JobRecord> Store::DeleteJob(std::int64_t job) {
  JobRecord deleted;
  Status status = writer_->Execute([&](Database& db) -> Status {
    Result<Statement> select =
        db.Prepare("SELECT " + std::string(kJobColumns) + " FROM jobs WHERE id = ?1");
    if (!select.ok()) return select.status();
    select.value().BindInt(1, job);
    Result<bool> row = select.value().Step();
    if (!row.ok()) return row.status();
    if (!row.value()) return Status::Error("no " + JobName(job));
    Result<JobRecord> record = ParseJob(select.value());
    if (!record.ok()) return record.status();
    if (!IsTerminal(record.value().state)) {
      return Status::Error("it is " + std::string(JobStateName(record.value().state)) +
                           ", not ended");
    }
    deleted = std::move(record).value();
    // The job's rows in the other tables go with it (ON DELETE CASCADE).
    Result<Statement> remove = db.Prepare("DELETE FROM jobs WHERE id = ?1");
    if (!remove.ok()) return remove.status();
    remove.value().BindInt(1, job);
    return remove.value().Run();
  });
  if (!status.ok()) return Status::Error(JobName(job) + ": " + status.message());
  return deleted;
}

Result<std::uint64_t> Store::Reclaim() {
  // Pages given back per transaction: 4 MiB of 4 KiB pages.
  constexpr std::int64_t kPagesPerStep = 1024;
  std::int64_t page_size = 0, before = 0, free_pages = 0, after = 0;
  auto count = [](Database& db, std::int64_t* pages, std::int64_t* free) -> Status {
    Result<std::int64_t> n = db.QueryInt("PRAGMA page_count");
    if (!n.ok()) return n.status();
    *pages = n.value();
    Result<std::int64_t> f = db.QueryInt("PRAGMA freelist_count");
    if (!f.ok()) return f.status();
    *free = f.value();
    return Status::Ok();
  };
  Status status = writer_->ExecuteBare([&](Database& db) -> Status {
    Result<std::int64_t> size = db.QueryInt("PRAGMA page_size");
    if (!size.ok()) return size.status();
    page_size = size.value();
    if (Status s = count(db, &before, &free_pages); !s.ok()) return s;
    Result<std::int64_t> mode = db.QueryInt("PRAGMA auto_vacuum");
    if (!mode.ok()) return mode.status();
    if (mode.value() == 2) return Status::Ok();  // incremental: step by step below
    // An older file: switching its mode takes one VACUUM, which also frees every page now.
    if (Status s = db.Exec("PRAGMA auto_vacuum = INCREMENTAL"); !s.ok()) return s;
    free_pages = 0;
    return db.Exec("VACUUM");
  });
  for (std::int64_t previous = -1; status.ok() && free_pages > 0 && free_pages != previous;) {
    previous = free_pages;  // a step that frees nothing ends the loop
    status = writer_->ExecuteBare([&](Database& db) -> Status {
      if (Status s = db.Exec("PRAGMA incremental_vacuum(" + std::to_string(kPagesPerStep) + ")");
          !s.ok()) {
        return s;
      }
      std::int64_t pages = 0;
      return count(db, &pages, &free_pages);
    });
  }
  if (status.ok()) {
    status = writer_->ExecuteBare([&](Database& db) -> Status {
      // The database file shrinks when the WAL is copied back into it; the WAL is emptied too.
      if (Status s = db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); !s.ok()) return s;
      return count(db, &after, &free_pages);
    });
  }
  if (!status.ok()) return Status::Error("cannot reclaim the store's free space: " + status.message());
  return static_cast<std::uint64_t>(std::max<std::int64_t>(0, before - after) * page_size);
}

Result<std::vector<JobRecord>> Store::ListJobs() {
  Result<std::vector<JobRecord>> jobs = QueryRows<JobRecord>(
      *readers_, "SELECT " + std::string(kJobColumns) + " FROM jobs ORDER BY id", [](Statement&) {},
      ParseJob);
  if (!jobs.ok()) return jobs;
  if (Status s = FillTags(*readers_, 0, jobs.value()); !s.ok()) return s;
  return jobs;
}

Result<std::vector<std::pair<JobState, std::int64_t>>> Store::CountJobsByState() {
  return QueryRows<std::pair<JobState, std::int64_t>>(
      *readers_, "SELECT state, count(*) FROM jobs GROUP BY state ORDER BY state",
      [](Statement&) {},
      [](const Statement& s) -> Result<std::pair<JobState, std::int64_t>> {
        Result<JobState> state = ParseJobState(s.ColumnText(0));
        if (!state.ok()) return state.status();
        return std::pair{state.value(), s.ColumnInt(1)};
      });
}

Result<Store::LogVolume> Store::LogVolumeOfOwner(std::int64_t owner_uid) {
  Result<std::vector<LogVolume>> rows = QueryRows<LogVolume>(
      *readers_,
      "SELECT count(*), coalesce(sum(length(CAST(logs.line AS BLOB))), 0) FROM logs "
      "JOIN jobs ON jobs.id = logs.job WHERE jobs.owner_uid = ?1",
      [&](Statement& s) { s.BindInt(1, owner_uid); },
      [](const Statement& s) -> Result<LogVolume> {
        return LogVolume{static_cast<std::uint64_t>(s.ColumnInt(0)),
                         static_cast<std::uint64_t>(s.ColumnInt(1))};
      });
  if (!rows.ok()) return rows.status();
  return rows.value().empty() ? LogVolume{} : rows.value().front();
}

Result<std::vector<EventRecord>> Store::Events(std::int64_t job) {
  return QueryRows<EventRecord>(
      *readers_, "SELECT time, from_state, to_state, reason FROM events WHERE job = ?1 ORDER BY id",
      [&](Statement& s) { s.BindInt(1, job); },
      [&](const Statement& s) -> Result<EventRecord> {
        EventRecord event;
        event.job = job;
        event.time = s.ColumnDouble(0);
        if (!s.ColumnIsNull(1)) {
          Result<JobState> from = ParseJobState(s.ColumnText(1));
          if (!from.ok()) return Status::Error(JobName(job) + ": " + from.status().message());
          event.from = from.value();
        }
        Result<JobState> to = ParseJobState(s.ColumnText(2));
        if (!to.ok()) return Status::Error(JobName(job) + ": " + to.status().message());
        event.to = to.value();
        event.reason = s.ColumnText(3);
        return event;
      });
}

// --- sweeps ---

Result<std::int64_t> Store::CreateSweep(const SweepRecord& sweep) {
  const double now = WallClock();
  std::int64_t id = 0;
  Status status = writer_->Execute([&](Database& db) -> Status {
    Result<Statement> insert = db.Prepare(
        "INSERT INTO sweeps (name, owner_uid, owner_gid, source, sweep_toml, job_toml, base_dir,"
        " method, metric, goal, trials, max_concurrent, state, created, updated, reason) VALUES"
        " (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?14, 'submitted')");
    if (!insert.ok()) return insert.status();
    insert.value()
        .BindText(1, sweep.name)
        .BindInt(2, sweep.owner_uid)
        .BindInt(3, sweep.owner_gid)
        .BindText(4, sweep.source)
        .BindText(5, sweep.sweep_toml)
        .BindText(6, sweep.job_toml)
        .BindText(7, sweep.base_dir)
        .BindText(8, sweep.method)
        .BindText(9, sweep.metric)
        .BindText(10, sweep.goal)
        .BindInt(11, sweep.trials)
        .BindInt(12, sweep.max_concurrent)
        .BindText(13, SweepStateName(SweepState::kRunning))
        .BindDouble(14, now);
    if (Status s = insert.value().Run(); !s.ok()) return s;
    id = db.LastInsertRowId();
    return Status::Ok();
  });
  if (!status.ok())
    return Status::Error("cannot create sweep '" + sweep.name + "': " + status.message());
  return id;
}

Result<std::int64_t> Store::CreateTrialJob(const SweepTrialRecord& trial, const JobRecord& job) {
  const double now = WallClock();
  std::int64_t id = 0;
  Status status = writer_->Execute([&](Database& db) -> Status {
    Result<SweepState> state = CurrentSweepState(db, trial.sweep);
    if (!state.ok()) return state.status();
    if (state.value() != SweepState::kRunning) {
      return Status::Error("the sweep is " + std::string(SweepStateName(state.value())));
    }
    Result<std::int64_t> inserted = InsertJob(db, job, now);
    if (!inserted.ok()) return inserted.status();
    id = inserted.value();
    Result<Statement> row = db.Prepare(
        "INSERT INTO sweep_trials (sweep, trial, job, parameters) VALUES (?1, ?2, ?3, ?4)");
    if (!row.ok()) return row.status();
    row.value()
        .BindInt(1, trial.sweep)
        .BindInt(2, trial.trial)
        .BindInt(3, id)
        .BindText(4, trial.parameters);
    return row.value().Run();
  });
  if (!status.ok()) {
    return Status::Error("cannot create trial " + std::to_string(trial.trial) + " of sweep " +
                         std::to_string(trial.sweep) + ": " + status.message());
  }
  return id;
}

Status Store::SetSweepState(std::int64_t sweep, SweepState to, const std::string& reason) {
  const double now = WallClock();
  Status status = writer_->Execute([&](Database& db) -> Status {
    Result<SweepState> from = CurrentSweepState(db, sweep);
    if (!from.ok()) return from.status();
    if (from.value() != SweepState::kRunning) {
      return Status::Error("it has ended (" + std::string(SweepStateName(from.value())) + ")");
    }
    Result<Statement> update =
        db.Prepare("UPDATE sweeps SET state = ?2, updated = ?3, reason = ?4 WHERE id = ?1");
    if (!update.ok()) return update.status();
    update.value()
        .BindInt(1, sweep)
        .BindText(2, SweepStateName(to))
        .BindDouble(3, now)
        .BindText(4, reason);
    return update.value().Run();
  });
  if (!status.ok())
    return Status::Error("sweep " + std::to_string(sweep) + ": " + status.message());
  return status;
}

Result<SweepRecord> Store::GetSweep(std::int64_t sweep) {
  Result<std::vector<SweepRecord>> rows = QueryRows<SweepRecord>(
      *readers_, "SELECT " + std::string(kSweepColumns) + " FROM sweeps WHERE id = ?1",
      [&](Statement& s) { s.BindInt(1, sweep); }, ParseSweep);
  if (!rows.ok()) return rows.status();
  if (rows.value().empty()) return Status::Error("no sweep " + std::to_string(sweep));
  return std::move(rows.value().front());
}

Result<std::vector<SweepRecord>> Store::ListSweeps() {
  return QueryRows<SweepRecord>(
      *readers_, "SELECT " + std::string(kSweepColumns) + " FROM sweeps ORDER BY id",
      [](Statement&) {}, ParseSweep);
}

Result<std::vector<SweepTrialRecord>> Store::SweepTrials(std::int64_t sweep) {
  return QueryRows<SweepTrialRecord>(
      *readers_,
      "SELECT t.sweep, t.trial, t.job, t.parameters, j.updated FROM sweep_trials t"
      " LEFT JOIN jobs j ON j.id = t.job WHERE t.sweep = ?1 ORDER BY t.trial",
      [&](Statement& s) { s.BindInt(1, sweep); },
      [](const Statement& s) -> Result<SweepTrialRecord> {
        SweepTrialRecord t;
        t.sweep = s.ColumnInt(0);
        t.trial = s.ColumnInt(1);
        if (!s.ColumnIsNull(2)) t.job = s.ColumnInt(2);
        t.parameters = s.ColumnText(3);
        if (!s.ColumnIsNull(4)) t.job_updated = s.ColumnDouble(4);
        return t;
      });
}

// --- worker processes ---

Result<std::int64_t> Store::RecordWorkerStart(std::int64_t job, int rank, std::string_view role,
                                              std::string_view host, std::int64_t pid,
                                              std::optional<double> at) {
  const double now = at.value_or(WallClock());
  std::int64_t id = 0;
  Status status = writer_->Execute([&](Database& db) -> Status {
    if (Result<JobState> state = CurrentState(db, job); !state.ok()) return state.status();
    Result<Statement> insert = db.Prepare(
        "INSERT INTO workers (job, rank, role, host, pid, state, started)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    if (!insert.ok()) return insert.status();
    insert.value()
        .BindInt(1, job)
        .BindInt(2, rank)
        .BindText(3, role)
        .BindText(4, host)
        .BindInt(5, pid)
        .BindText(6, WorkerStateName(WorkerState::kRunning))
        .BindDouble(7, now);
    if (Status s = insert.value().Run(); !s.ok()) return s;
    id = db.LastInsertRowId();
    return Status::Ok();
  });
  if (!status.ok()) {
    return Status::Error(status.code(), JobName(job) + ": cannot record worker " +
                                            std::to_string(rank) + ": " + status.message());
  }
  return id;
}

Status Store::RecordWorkerExit(std::int64_t worker, int exit_status, int signal,
                               std::optional<double> at) {
  const double now = at.value_or(WallClock());
  const bool killed = signal > 0;
  Status status = writer_->Execute([&](Database& db) -> Status {
    Result<Statement> update = db.Prepare(
        "UPDATE workers SET state = ?2, exit_status = ?3, signal = ?4, ended = ?5,"
        " ended_step = max(coalesce((SELECT max(step) FROM metrics WHERE metrics.job ="
        " workers.job), 0), coalesce((SELECT max(step) FROM checkpoints WHERE"
        " checkpoints.job = workers.job), 0))"
        " WHERE id = ?1 AND ended IS NULL");
    if (!update.ok()) return update.status();
    Statement& s = update.value();
    s.BindInt(1, worker).BindText(
        2, WorkerStateName(killed ? WorkerState::kKilled : WorkerState::kExited));
    if (killed) {
      s.BindNull(3).BindInt(4, signal);
    } else {
      s.BindInt(3, exit_status).BindNull(4);
    }
    s.BindDouble(5, now);
    if (Status run = s.Run(); !run.ok()) return run;
    if (db.Changes() == 0) return Status::Error("no running worker with that id");
    return Status::Ok();
  });
  if (!status.ok()) {
    return Status::Error(status.code(),
                         "worker record " + std::to_string(worker) + ": " + status.message());
  }
  return status;
}

Result<std::vector<WorkerRecord>> Store::Workers(std::int64_t job) {
  return QueryRows<WorkerRecord>(
      *readers_,
      "SELECT id, rank, role, host, pid, state, exit_status, signal, started, ended, ended_step"
      " FROM workers WHERE job = ?1 ORDER BY id",
      [&](Statement& s) { s.BindInt(1, job); },
      [&](const Statement& s) -> Result<WorkerRecord> {
        WorkerRecord w;
        w.id = s.ColumnInt(0);
        w.job = job;
        w.rank = static_cast<int>(s.ColumnInt(1));
        w.role = s.ColumnText(2);
        w.host = s.ColumnText(3);
        w.pid = s.ColumnInt(4);
        Result<WorkerState> state = ParseWorkerState(s.ColumnText(5));
        if (!state.ok()) return Status::Error(JobName(job) + ": " + state.status().message());
        w.state = state.value();
        if (!s.ColumnIsNull(6)) w.exit_status = static_cast<int>(s.ColumnInt(6));
        if (!s.ColumnIsNull(7)) w.signal = static_cast<int>(s.ColumnInt(7));
        w.started = s.ColumnDouble(8);
        if (!s.ColumnIsNull(9)) w.ended = s.ColumnDouble(9);
        if (!s.ColumnIsNull(10)) w.ended_step = s.ColumnInt(10);
        return w;
      });
}

// --- metrics and logs ---

void Store::AppendMetrics(std::int64_t job, int worker,
                          std::span<const train::MetricPoint> points) {
  writer_->Append(MetricRows{job, worker, WallClock(), {points.begin(), points.end()}});
}

void Store::AppendLog(std::int64_t job, int worker, std::string_view stream,
                      std::string_view line) {
  writer_->Append(LogLine{job, worker, WallClock(), std::string(stream), std::string(line)});
}

Status Store::Flush() { return writer_->Flush(); }

Result<std::vector<MetricRow>> Store::Metrics(std::int64_t job, const std::string& name_filter,
                                              std::int64_t after_step) {
  // Two texts rather than "(?2 = '' OR name = ?2)", which would keep SQLite from using the
  // (job, name, step) index.
  const std::string_view sql =
      name_filter.empty() ? "SELECT step, worker, name, value, epoch, time FROM metrics"
                            " WHERE job = ?1 AND step > ?3 ORDER BY step, rowid"
                          : "SELECT step, worker, name, value, epoch, time FROM metrics"
                            " WHERE job = ?1 AND name = ?2 AND step > ?3 ORDER BY step, rowid";
  return QueryRows<MetricRow>(
      *readers_, sql,
      [&](Statement& s) { s.BindInt(1, job).BindText(2, name_filter).BindInt(3, after_step); },
      ReadMetricRow);
}

Result<std::vector<MetricRow>> Store::LatestMetrics(std::int64_t job) {
  return QueryRows<MetricRow>(
      *readers_,
      "SELECT step, worker, name, value, epoch, time FROM metrics WHERE rowid IN"
      " (SELECT max(rowid) FROM metrics WHERE job = ?1 GROUP BY name) ORDER BY name",
      [&](Statement& s) { s.BindInt(1, job); }, ReadMetricRow);
}

Result<std::vector<std::pair<std::int64_t, MetricRow>>> Store::MetricsAfter(
    std::int64_t job, std::int64_t after_id, std::size_t limit) {
  const auto bounded = static_cast<std::int64_t>(
      std::min<std::size_t>(limit, std::numeric_limits<std::int64_t>::max()));
  return QueryRows<std::pair<std::int64_t, MetricRow>>(
      *readers_,
      "SELECT step, worker, name, value, epoch, time, rowid FROM metrics"
      // +job: walk the rows after the cursor (a range of rowid), not the job's whole index.
      " WHERE +job = ?1 AND rowid > ?2 ORDER BY rowid LIMIT ?3",
      [&](Statement& s) { s.BindInt(1, job).BindInt(2, after_id).BindInt(3, bounded); },
      [](const Statement& s) -> Result<std::pair<std::int64_t, MetricRow>> {
        Result<MetricRow> row = ReadMetricRow(s);
        if (!row.ok()) return row.status();
        return std::pair{s.ColumnInt(6), std::move(row).value()};
      });
}

Result<std::vector<MetricRow>> Store::LatestMetricPerWorker(std::int64_t job,
                                                            const std::string& name) {
  return QueryRows<MetricRow>(
      *readers_,
      "SELECT step, worker, name, value, epoch, time FROM metrics WHERE rowid IN"
      " (SELECT max(rowid) FROM metrics WHERE job = ?1 AND name = ?2 GROUP BY worker)"
      " ORDER BY worker",
      [&](Statement& s) { s.BindInt(1, job).BindText(2, name); }, ReadMetricRow);
}

Result<std::vector<MetricRow>> Store::MetricSums(std::int64_t job,
                                                 std::span<const std::string> names) {
  std::vector<MetricRow> out;
  for (const std::string& name : names) {
    Result<std::vector<MetricRow>> sums = QueryRows<MetricRow>(
        *readers_,
        "SELECT max(step), worker, name, total(value), max(epoch), max(time) FROM metrics"
        " WHERE job = ?1 AND name = ?2 GROUP BY worker",
        [&](Statement& s) { s.BindInt(1, job).BindText(2, name); }, ReadMetricRow);
    if (!sums.ok()) return sums.status();
    out.insert(out.end(), sums.value().begin(), sums.value().end());
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const MetricRow& a, const MetricRow& b) { return a.worker < b.worker; });
  return out;
}

Result<std::vector<LogRow>> Store::Logs(std::int64_t job, std::int64_t after_id,
                                        std::size_t limit) {
  const auto bounded = static_cast<std::int64_t>(
      std::min<std::size_t>(limit, std::numeric_limits<std::int64_t>::max()));
  return QueryRows<LogRow>(
      *readers_,
      "SELECT id, worker, stream, time, line FROM logs WHERE job = ?1 AND id > ?2"
      " ORDER BY id LIMIT ?3",
      [&](Statement& s) { s.BindInt(1, job).BindInt(2, after_id).BindInt(3, bounded); },
      [](const Statement& s) -> Result<LogRow> {
        return LogRow{s.ColumnInt(0), static_cast<int>(s.ColumnInt(1)),
                      std::string(s.ColumnText(2)), s.ColumnDouble(3),
                      std::string(s.ColumnText(4))};
      });
}

// --- checkpoints ---

Status Store::SaveCheckpoint(std::int64_t job, const CheckpointView& checkpoint, int keep) {
  const std::string context = CheckpointName(job, checkpoint.step) + ": ";
  if (keep < 1)
    return Status::Error(context + "keep must be at least 1, not " + std::to_string(keep));
  // Serialised here, on the caller's thread: the writer only binds the bytes.
  const std::string blob = EncodeCheckpoint(checkpoint);
  const std::uint32_t checksum = *StoredChecksum(blob);
  const double now = WallClock();
  Status status = writer_->Execute([&](Database& db) -> Status {
    if (static_cast<std::int64_t>(blob.size()) > db.MaxBlobSize()) {
      return Status::Error("the checkpoint is " + std::to_string(blob.size()) +
                           " bytes, more than SQLite's limit of " +
                           std::to_string(db.MaxBlobSize()));
    }
    if (Result<JobState> state = CurrentState(db, job); !state.ok()) return state.status();
    Result<Statement> insert = db.Prepare(
        "INSERT INTO checkpoints (job, step, epoch, time, byte_size, checksum, blob)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
        " ON CONFLICT (job, step) DO UPDATE SET epoch = excluded.epoch, time = excluded.time,"
        " byte_size = excluded.byte_size, checksum = excluded.checksum, blob = excluded.blob");
    if (!insert.ok()) return insert.status();
    insert.value()
        .BindInt(1, job)
        .BindInt(2, checkpoint.step)
        .BindInt(3, static_cast<std::int64_t>(checkpoint.epoch))
        .BindDouble(4, now)
        .BindInt(5, static_cast<std::int64_t>(blob.size()))
        .BindInt(6, checksum)
        .BindBlob(7, blob);
    if (Status s = insert.value().Run(); !s.ok()) return s;
    Result<Statement> prune = db.Prepare(
        "DELETE FROM checkpoints WHERE job = ?1 AND step NOT IN"
        " (SELECT step FROM checkpoints WHERE job = ?1 ORDER BY step DESC LIMIT ?2)");
    if (!prune.ok()) return prune.status();
    prune.value().BindInt(1, job).BindInt(2, keep);
    return prune.value().Run();
  }, OnDiskFull::kFail);  // a checkpoint must not eat the space kept to record its failure
  if (!status.ok()) return Status::Error(context + status.message());
  return status;
}

Result<LatestCheckpointResult> Store::LatestCheckpoint(std::int64_t job) {
  Result<ConnectionPool::Lease> lease = readers_->Acquire();
  if (!lease.ok()) return lease.status();
  Database& db = *lease.value();
  Result<Statement> select =
      db.Prepare("SELECT step, checksum, blob FROM checkpoints WHERE job = ?1 ORDER BY step DESC");
  if (!select.ok()) return WithPath(db.path(), select.status());
  Statement& s = select.value();
  s.BindInt(1, job);
  LatestCheckpointResult result;
  for (;;) {
    Result<bool> row = s.Step();
    if (!row.ok()) return WithPath(db.path(), row.status());
    if (!row.value()) return result;
    Result<CheckpointData> data =
        VerifyCheckpoint(job, s.ColumnInt(0), s.ColumnInt(1), s.ColumnBlob(2));
    if (data.ok()) {
      result.checkpoint = std::move(data).value();
      return result;
    }
    result.skipped.push_back(data.status().message());
  }
}

Result<CheckpointData> Store::LoadCheckpoint(std::int64_t job, std::int64_t step) {
  Result<std::vector<CheckpointData>> rows = QueryRows<CheckpointData>(
      *readers_, "SELECT checksum, blob FROM checkpoints WHERE job = ?1 AND step = ?2",
      [&](Statement& s) { s.BindInt(1, job).BindInt(2, step); },
      [&](const Statement& s) {
        return VerifyCheckpoint(job, step, s.ColumnInt(0), s.ColumnBlob(1));
      });
  if (!rows.ok()) return rows.status();
  if (rows.value().empty()) return Status::Error("no " + CheckpointName(job, step));
  return std::move(rows.value().front());
}

Result<std::vector<CheckpointInfo>> Store::Checkpoints(std::int64_t job) {
  return QueryRows<CheckpointInfo>(
      *readers_,
      "SELECT step, time, byte_size, checksum FROM checkpoints WHERE job = ?1 ORDER BY step",
      [&](Statement& s) { s.BindInt(1, job); },
      [](const Statement& s) -> Result<CheckpointInfo> {
        return CheckpointInfo{s.ColumnInt(0), s.ColumnDouble(1), s.ColumnInt(2),
                              static_cast<std::uint32_t>(s.ColumnInt(3))};
      });
}

namespace {

// Whether `best` beats the job's stored best model (true when it has none, or one judged by
// another metric). A run resumed from a checkpoint older than its stored best may judge a
// worse model improving; the store keeps the better one, so best_step and best_value never get
// worse.
Result<bool> BeatsStoredBest(Database& db, std::int64_t job, const BestModelInfo& best) {
  Result<Statement> query = db.Prepare("SELECT metric, value FROM best_models WHERE job = ?1");
  if (!query.ok()) return query.status();
  query.value().BindInt(1, job);
  Result<bool> row = query.value().Step();
  if (!row.ok()) return row.status();
  if (!row.value() || query.value().ColumnText(0) != best.metric) return true;
  Result<train::EarlyStoppingMetric> metric = train::ParseEarlyStoppingMetric(best.metric);
  if (!metric.ok()) return metric.status();
  return train::Improves(metric.value(), best.value, query.value().ColumnDouble(1), 0.0);
}

}  // namespace

Status Store::SaveBestModel(std::int64_t job, const BestModelInfo& best,
                            const CheckpointView& model) {
  const std::string context =
      "job " + std::to_string(job) + "'s best model at step " + std::to_string(best.step) + ": ";
  const std::string blob = EncodeCheckpoint(model);
  const std::uint32_t checksum = *StoredChecksum(blob);
  const double now = WallClock();
  Status status = writer_->Execute(
      [&](Database& db) -> Status {
        if (static_cast<std::int64_t>(blob.size()) > db.MaxBlobSize()) {
          return Status::Error("the model is " + std::to_string(blob.size()) +
                               " bytes, more than SQLite's limit of " +
                               std::to_string(db.MaxBlobSize()));
        }
        if (Result<JobState> state = CurrentState(db, job); !state.ok()) return state.status();
        Result<bool> better = BeatsStoredBest(db, job, best);
        if (!better.ok() || !better.value()) return better.status();
        Result<Statement> upsert = db.Prepare(
            "INSERT INTO best_models (job, step, metric, value, time, checksum, blob)"
            " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
            " ON CONFLICT (job) DO UPDATE SET step = excluded.step, metric = excluded.metric,"
            " value = excluded.value, time = excluded.time, checksum = excluded.checksum,"
            " blob = excluded.blob");
        if (!upsert.ok()) return upsert.status();
        upsert.value()
            .BindInt(1, job)
            .BindInt(2, best.step)
            .BindText(3, best.metric)
            .BindDouble(4, best.value)
            .BindDouble(5, now)
            .BindInt(6, checksum)
            .BindBlob(7, blob);
        return upsert.value().Run();
      },
      OnDiskFull::kFail);  // like a checkpoint: the space kept is for recording the failure
  if (!status.ok()) return Status::Error(context + status.message());
  return status;
}

Result<std::optional<BestModelInfo>> Store::BestModel(std::int64_t job) {
  Result<std::vector<BestModelInfo>> rows = QueryRows<BestModelInfo>(
      *readers_, "SELECT step, metric, value, time FROM best_models WHERE job = ?1",
      [&](Statement& s) { s.BindInt(1, job); },
      [](const Statement& s) -> Result<BestModelInfo> {
        return BestModelInfo{s.ColumnInt(0), std::string(s.ColumnText(1)), s.ColumnDouble(2),
                             s.ColumnDouble(3)};
      });
  if (!rows.ok()) return rows.status();
  if (rows.value().empty()) return std::optional<BestModelInfo>();
  return std::optional<BestModelInfo>(std::move(rows.value().front()));
}

Result<std::optional<CheckpointData>> Store::LoadBestModel(std::int64_t job) {
  Result<std::vector<CheckpointData>> rows = QueryRows<CheckpointData>(
      *readers_, "SELECT step, checksum, blob FROM best_models WHERE job = ?1",
      [&](Statement& s) { s.BindInt(1, job); },
      [&](const Statement& s) -> Result<CheckpointData> {
        Result<CheckpointData> data =
            VerifyCheckpoint(job, s.ColumnInt(0), s.ColumnInt(1), s.ColumnBlob(2));
        if (!data.ok()) return Status::Error("best model: " + data.status().message());
        return data;
      });
  if (!rows.ok()) return rows.status();
  if (rows.value().empty()) return std::optional<CheckpointData>();
  return std::optional<CheckpointData>(std::move(rows.value().front()));
}

Status Store::SaveClassReport(std::int64_t job, std::int64_t step,
                              const train::ClassReport& report) {
  const std::string confusion = train::ConfusionRowsJson(report);
  const double now = WallClock();
  Status status = writer_->Execute(
      [&](Database& db) -> Status {
        if (Result<JobState> state = CurrentState(db, job); !state.ok()) return state.status();
        Result<Statement> upsert = db.Prepare(
            "INSERT INTO class_reports (job, step, classes, confusion, time)"
            " VALUES (?1, ?2, ?3, ?4, ?5)"
            " ON CONFLICT (job) DO UPDATE SET step = excluded.step, classes = excluded.classes,"
            " confusion = excluded.confusion, time = excluded.time");
        if (!upsert.ok()) return upsert.status();
        upsert.value()
            .BindInt(1, job)
            .BindInt(2, step)
            .BindInt(3, report.classes)
            .BindText(4, confusion)
            .BindDouble(5, now);
        return upsert.value().Run();
      },
      OnDiskFull::kUseReserve);  // small, and part of the job's result
  if (!status.ok()) {
    return Status::Error("job " + std::to_string(job) + "'s per-class report at step " +
                         std::to_string(step) + ": " + status.message());
  }
  return status;
}

Result<std::optional<StoredClassReport>> Store::FinalClassReport(std::int64_t job) {
  Result<std::vector<StoredClassReport>> rows = QueryRows<StoredClassReport>(
      *readers_, "SELECT step, classes, confusion, time FROM class_reports WHERE job = ?1",
      [&](Statement& s) { s.BindInt(1, job); },
      [&](const Statement& s) -> Result<StoredClassReport> {
        Result<train::ClassReport> report = train::ClassReportOfRows(s.ColumnText(2));
        if (report.ok() && report.value().classes != s.ColumnInt(1)) {
          report = Status::Error("it has " + std::to_string(report.value().classes) +
                                 " classes, its row says " + std::to_string(s.ColumnInt(1)));
        }
        if (!report.ok()) {
          return Status::Error(
              "job " + std::to_string(job) +
              "'s stored per-class report is damaged: " + report.status().message());
        }
        return StoredClassReport{s.ColumnInt(0), std::move(report).value(), s.ColumnDouble(3)};
      });
  if (!rows.ok()) return rows.status();
  if (rows.value().empty()) return std::optional<StoredClassReport>();
  return std::optional<StoredClassReport>(std::move(rows.value().front()));
}

}  // namespace dtrain::store
