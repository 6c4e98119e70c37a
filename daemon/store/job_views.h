// What the control protocol shows of jobs, built from a store alone: the JOB object of
// control_protocol.md (state, reason, owner, step: the furthest of its metrics and its newest
// checkpoint, total_steps, steps_per_sec and eta_seconds: its pace, epoch, epoch_rows and
// rows_per_epoch: its place in the epoch, restarts, latest metrics, best_step, best_value and
// best_metric: its best model's evaluation (null when it keeps none), class_report: its final
// evaluation's per-class report (train::ClassReportJson and its "step"; null when none), slurm and
// slurm_grants: its newest Slurm allocation and every grant of its newest granted attempt
// (store::AttemptSlurmGrants), workers and, when asked, events) and the newest jobs. The daemon
// adds what only it knows (restarts not yet recorded, the reason a queued job waits); `dtrain
// status/list --db` show them as recorded.
//
//   Result<nlohmann::json> job = StoredJobJson(store, 7, /*with_events=*/true);
//   for (std::int64_t id : NewestJobIds(store, std::nullopt, 20).value()) ...
//
// Plain functions over the store (they block on SQLite): call them off an event loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "daemon/store/store.h"

namespace dtrain::store {

nlohmann::json EventJson(const EventRecord& e);
nlohmann::json WorkerJson(const WorkerRecord& w);
// A metrics row as `metrics` replies and the dashboard send it (its value: MetricValueJson).
nlohmann::json MetricJson(const MetricRow& m);
// A log line, the LINE of control_protocol.md.
nlohmann::json LogLineJson(const LogRow& l);

// train::kPlannedSteps, the metric a run records as it starts, is the JOB object's total_steps,
// not one of its `metrics`.
// A job's pace from its latest metrics (one row per name) and its step: {"total_steps" (the
// newest planned_steps, or null), "steps_per_sec" (the steps since that row over the seconds
// since it, or null before a later step is recorded), "eta_seconds" (the steps left at that
// rate, while the job is running; else null)}.
nlohmann::json PaceJson(const std::vector<MetricRow>& latest, std::int64_t step, JobState state);

// train::kEpochRows and kRowsPerEpoch, what a sync run records of its place in the epoch, are the
// JOB object's {"epoch" (0-based: the epoch of the last step before the newest epoch_rows
// point), "epoch_rows" (the rows of it the replicas have taken), "rows_per_epoch"}, all null where
// the run records none.
nlohmann::json EpochJson(const std::vector<MetricRow>& latest);

// What a follower's progress bar shows of a JOB object: {"state", "step", "total_steps",
// "steps_per_sec", "eta_seconds", "metrics"} (control_protocol.md's PROGRESS).
nlohmann::json ProgressJson(const nlohmann::json& job);

// The JOB object of job `id`; an error when the store has no such job.
Result<nlohmann::json> StoredJobJson(Store& store, std::int64_t id, bool with_events);

// Lays what only the daemon knows over a stored JOB object: restarts counted before their event
// is written (the larger count wins) and, for a queued job, why it waits (when non-empty).
void OverlayLive(nlohmann::json& job, int restarts, const std::string& pending_reason);

// The last value of `metric` recorded at a step <= `up_to_step` by the job's process `lead_rank`
// (config::LeadRank), or by any process when that one recorded none; nothing when none did (or
// the store cannot be read): the value a sweep ranks the job's trial by (at a rung: up to its
// step).
std::optional<double> FinalMetric(
    Store& store, std::int64_t job, int lead_rank, const std::string& metric,
    std::int64_t up_to_step = std::numeric_limits<std::int64_t>::max());
// The same over the metric's rows as Store::Metrics returns them.
std::optional<double> FinalMetric(const std::vector<MetricRow>& rows, int lead_rank,
                                  std::int64_t up_to_step);

// A job's step as the JOB object shows it: the furthest of its latest metrics (Store::
// LatestMetrics) and its newest checkpoint (Store::Checkpoints, oldest first).
std::int64_t FurthestStep(const std::vector<MetricRow>& latest,
                          const std::vector<CheckpointInfo>& checkpoints);

// The ids of at most `limit` jobs, newest first, only those in `state` when given and only those
// carrying every one of `tags`.
Result<std::vector<std::int64_t>> NewestJobIds(Store& store, std::optional<JobState> state,
                                               std::size_t limit,
                                               std::span<const std::string> tags = {});

}  // namespace dtrain::store
