#include "daemon/store/schema.h"

#include <cstdint>
#include <string>

namespace dtrain::store {
namespace {

// Times are REAL seconds since the Unix epoch. Every table that belongs to a job starts its
// indexes with `job`, which also serves ON DELETE CASCADE.
constexpr std::string_view kCreateTables = R"sql(
CREATE TABLE jobs (
  id        INTEGER PRIMARY KEY AUTOINCREMENT,  -- ids are shown to users: never reused
  name      TEXT    NOT NULL,
  owner_uid INTEGER NOT NULL,
  state     TEXT    NOT NULL,                   -- JobStateName
  priority  INTEGER NOT NULL,
  spec_toml TEXT    NOT NULL,                   -- the fully resolved job file
  created   REAL    NOT NULL,
  updated   REAL    NOT NULL,
  reason    TEXT    NOT NULL                    -- reason of the latest transition
) STRICT;

CREATE TABLE events (
  id         INTEGER PRIMARY KEY,
  job        INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  time       REAL    NOT NULL,
  from_state TEXT,                              -- NULL for the submission
  to_state   TEXT    NOT NULL,
  reason     TEXT    NOT NULL
) STRICT;
CREATE INDEX events_by_job ON events(job, id);

CREATE TABLE workers (
  id          INTEGER PRIMARY KEY,
  job         INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  rank        INTEGER NOT NULL,
  role        TEXT    NOT NULL,
  host        TEXT    NOT NULL,
  pid         INTEGER NOT NULL,
  state       TEXT    NOT NULL,                 -- WorkerStateName
  exit_status INTEGER,
  signal      INTEGER,
  started     REAL    NOT NULL,
  ended       REAL
) STRICT;
CREATE INDEX workers_by_job ON workers(job, id);

CREATE TABLE metrics (
  job    INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  step   INTEGER NOT NULL,
  worker INTEGER NOT NULL,
  name   TEXT    NOT NULL,
  value  REAL    NOT NULL,
  epoch  REAL    NOT NULL,
  time   REAL    NOT NULL
) STRICT;
CREATE INDEX metrics_by_name ON metrics(job, name, step);

CREATE TABLE checkpoints (
  id        INTEGER PRIMARY KEY,
  job       INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  step      INTEGER NOT NULL,
  epoch     INTEGER NOT NULL,
  time      REAL    NOT NULL,
  byte_size INTEGER NOT NULL,
  checksum  INTEGER NOT NULL,                   -- the blob's CRC-32 (checkpoint_format.md)
  blob      BLOB    NOT NULL,
  UNIQUE (job, step)
) STRICT;

CREATE TABLE logs (
  id     INTEGER PRIMARY KEY AUTOINCREMENT,     -- the cursor of `dtrain logs -f`: never reused
  job    INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  worker INTEGER NOT NULL,
  stream TEXT    NOT NULL,
  time   REAL    NOT NULL,
  line   TEXT    NOT NULL
) STRICT;
CREATE INDEX logs_by_job ON logs(job, id);
)sql";

// A job's processes run as its submitter: uid and gid (-1: the primary group of owner_uid).
constexpr std::string_view kAddOwnerGid = R"sql(
ALTER TABLE jobs ADD COLUMN owner_gid INTEGER NOT NULL DEFAULT -1;
)sql";

// A metric's value may be NaN (a loss that diverged), which SQLite stores as NULL: the column
// admits NULL (SQLite cannot drop a NOT NULL in place, so the table is copied).
constexpr std::string_view kNanMetrics = R"sql(
CREATE TABLE metrics_admitting_nan (
  job    INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  step   INTEGER NOT NULL,
  worker INTEGER NOT NULL,
  name   TEXT    NOT NULL,
  value  REAL,                                   -- NULL: NaN
  epoch  REAL    NOT NULL,
  time   REAL    NOT NULL
) STRICT;
INSERT INTO metrics_admitting_nan SELECT job, step, worker, name, value, epoch, time FROM metrics;
DROP TABLE metrics;
ALTER TABLE metrics_admitting_nan RENAME TO metrics;
CREATE INDEX metrics_by_name ON metrics(job, name, step);
)sql";

// The furthest step the job had recorded (metrics and checkpoints) when a process ended, kept
// with the process: its checkpoints may be pruned later, and `dtrain why` names that step.
constexpr std::string_view kWorkerEndStep = R"sql(
ALTER TABLE workers ADD COLUMN ended_step INTEGER;
)sql";

// A job's tags (the job file's `tags`), in the order given; `dtrain list --tag` selects by them.
// A job of an older store has none.
constexpr std::string_view kJobTags = R"sql(
CREATE TABLE job_tags (
  job      INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,                    -- 0-based, in the job file's order
  tag      TEXT    NOT NULL,
  PRIMARY KEY (job, position),
  UNIQUE (job, tag)
) STRICT;
)sql";

// The model of each job's best evaluation (checkpoint.keep_best, train.early_stopping): one row a
// job, replaced on each improvement; its blob a checkpoint's encoding of the parameters alone.
constexpr std::string_view kBestModels = R"sql(
CREATE TABLE best_models (
  job      INTEGER PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
  step     INTEGER NOT NULL,                    -- the step of the evaluation that judged it
  metric   TEXT    NOT NULL,                    -- eval_accuracy or eval_loss
  value    REAL    NOT NULL,                    -- the metric's value at that evaluation
  time     REAL    NOT NULL,
  checksum INTEGER NOT NULL,                    -- the blob's CRC-32 (checkpoint_format.md)
  blob     BLOB    NOT NULL
) STRICT;
)sql";

// Sweeps (dtrain sweep submit): the sweep file as submitted, from which every trial is drawn
// again, and one row per trial whose job was created, made in the job's own transaction: a
// trial has one job or none, never two, and a crash loses neither.
constexpr std::string_view kSweeps = R"sql(
CREATE TABLE sweeps (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,  -- shown to users: never reused
  name           TEXT    NOT NULL,
  owner_uid      INTEGER NOT NULL,
  owner_gid      INTEGER NOT NULL,
  source         TEXT    NOT NULL,                   -- the sweep file's path when submitted
  sweep_toml     TEXT    NOT NULL,                   -- the sweep file's text
  job_toml       TEXT    NOT NULL,                   -- the base job file's text, or ''
  base_dir       TEXT    NOT NULL,                   -- relative paths resolve against it
  method         TEXT    NOT NULL,
  metric         TEXT    NOT NULL,
  goal           TEXT    NOT NULL,
  trials         INTEGER NOT NULL,
  max_concurrent INTEGER NOT NULL,
  state          TEXT    NOT NULL,                   -- SweepStateName
  created        REAL    NOT NULL,
  updated        REAL    NOT NULL,
  reason         TEXT    NOT NULL
) STRICT;

CREATE TABLE sweep_trials (
  sweep      INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  trial      INTEGER NOT NULL,                       -- 0-based, in generation order
  job        INTEGER UNIQUE REFERENCES jobs(id) ON DELETE SET NULL,
  parameters TEXT    NOT NULL,                       -- JSON: the trial's values
  PRIMARY KEY (sweep, trial)
) STRICT;
)sql";

// The per-class report of each job's final evaluation (daemon/runner/final_class_report.h): one
// row a job, its confusion matrix as JSON rows of counts (rows the true class, columns the
// predicted one) for 2 to train::kMaxReportClasses (100) classes; the ratios are read from it.
constexpr std::string_view kClassReports = R"sql(
CREATE TABLE class_reports (
  job       INTEGER PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
  step      INTEGER NOT NULL,                   -- the step of the final evaluation
  classes   INTEGER NOT NULL,
  confusion TEXT    NOT NULL,                   -- JSON: [[count, ...], ...]
  time      REAL    NOT NULL
) STRICT;
)sql";

constexpr Migration kMigrations[] = {
    {"create the run store tables", kCreateTables},
    {"add the owner's gid to jobs", kAddOwnerGid},
    {"let metric values be NaN", kNanMetrics},
    {"keep the step each process ended at", kWorkerEndStep},
    {"add the jobs' tags", kJobTags},
    {"keep each job's best model", kBestModels},
    {"add sweeps and their trials", kSweeps},
    {"keep each job's final per-class report", kClassReports},
};

}  // namespace

std::span<const Migration> StoreMigrations() { return kMigrations; }

Status Migrate(Database& db, std::span<const Migration> migrations) {
  const auto known = static_cast<std::int64_t>(migrations.size());
  for (;;) {
    std::int64_t applying = -1;  // the 0-based step being applied, when one is
    bool done = false;
    Status step = InTransaction(db, [&]() -> Status {
      Result<std::int64_t> version = db.QueryInt("PRAGMA user_version");
      if (!version.ok()) return version.status();
      if (version.value() > known) {
        return Status::Error("schema version " + std::to_string(version.value()) +
                             " is newer than this dtrain understands (" + std::to_string(known) +
                             "); open it with a newer dtrain");
      }
      if (version.value() < 0) {
        return Status::Error("invalid schema version " + std::to_string(version.value()));
      }
      if (version.value() == known) {
        done = true;
        return Status::Ok();
      }
      applying = version.value();
      if (Status applied = db.Exec(migrations[applying].sql); !applied.ok()) return applied;
      // PRAGMA takes no bound parameters; the value is an integer computed here.
      return db.Exec("PRAGMA user_version = " + std::to_string(applying + 1));
    });
    if (!step.ok()) {
      std::string where = db.path() + ": ";
      if (applying >= 0) {
        where += "migration " + std::to_string(applying + 1) + " (" +
                 std::string(migrations[applying].description) + "): ";
      }
      return Status::Error(where + step.message());
    }
    if (done) return Status::Ok();
  }
}

}  // namespace dtrain::store
