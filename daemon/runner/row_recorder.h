// RowRecorder: for tests of the data order, which training rows each step of a replica took,
// appended to a file as the step is taken (TrainListener::Taking), before any of its gradient
// leaves the replica: a replica killed in the step's exchange has recorded the rows the others
// may have applied. Off unless the process's environment names a file prefix
// in DTRAIN_RECORD_ROWS (the daemon passes it on to its jobs' processes from its own
// environment; a submitter cannot set it); then replica r appends to "PREFIX.r" one line a step:
//
//   EPOCH BATCH WORLD POSITION ROW ROW ...
//
// BATCH: the step's place in its epoch; WORLD: the replicas that trained it (a static job's
// cluster.workers, an elastic job's membership); POSITION: this replica's index among them (its
// data shard; a static job's rank); ROW: 0-based training rows. An elastic job's replica records
// under its position in each membership it trains in, so a file may hold several processes' lines.
// With backup workers, a step that did not take every replica's gradient (or after which this
// replica skipped steps: its gradient came late) adds, once applied, the line
//
//   T EPOCH BATCH WORLD MASK MASK ...
//
// one MASK a step from BATCH on (train::Strategy::TakenMasks), all taken by the membership of
// WORLD replicas this one trained in: bit r set where the step took the gradient of the replica
// at position r; the rows of the others are served again by a later step. A step that never got
// its masks (its exchange failed: an elastic job's membership regrouped) was not applied.
//
// Each line is one write(2) in append mode, so a killed process leaves whole lines (and at most
// a last partial one, which readers drop); a step redone after a restart or a regroup is
// appended again, and so is a step whose exchange failed.
// One thread at a time (the training thread).
#pragma once

#include <memory>
#include <string>

#include "core/train/trainer.h"
#include "core/unique_fd.h"

namespace dtrain::runner {

class RowRecorder {
 public:
  // The recorder of the replica at `rank` (its position) where DTRAIN_RECORD_ROWS is set, else
  // null.
  static std::unique_ptr<RowRecorder> FromEnvironment(int rank);

  // Appends the line of the step `trainer` is taking; a failed write is reported once, on
  // stderr, and recording stops (it never stops training).
  void Record(const train::Trainer& trainer);
  // After the step: its masks' line, where it has masks; written and failing like Record's.
  void RecordMasks(const train::Trainer& trainer);

 private:
  // line_ and a newline, in one write(2).
  void Append();

  RowRecorder(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}

  UniqueFd fd_;
  std::string path_;
  std::string line_;
};

}  // namespace dtrain::runner
