// For tests of the data order: a CSV file whose rows carry shuffled ids, the environment that
// makes a daemon's replicas record the rows each step took (DTRAIN_RECORD_ROWS,
// daemon/runner/row_recorder.h: one file per rank, a line per step taken,
// "EPOCH BATCH WORLD POSITION ROW ...", and with backup workers "T EPOCH BATCH WORLD MASK ..."
// after each step applied), and the reading of those files into the rows each step of each
// epoch took over the whole job.
//
//   const std::vector<int> ids = WriteRowsWithIds(dir.Path("rows.csv"), 12000);
//   const RecordedRows recording(dir.Path("taken"));   // before the daemon starts
//   ... train ...
//   const TakenSteps steps = ReadTakenSteps(dir.Path("taken"), workers);
//   steps.rows.at({epoch, batch});                     // the step's rows, every member's
//   CheckEveryIdOncePerEpoch(steps, ids, epochs, steps_per_epoch);
//
// Lines are written as a step is taken, before its exchange: a step is the rows of a membership
// (its WORLD) whose positions 0..WORLD-1 all recorded it. A step whose exchange failed and was
// redone by a new membership is recorded by both (or only the second, if the first lost a member
// before it took the step); so is each of the steps an elastic local job rolls back over (those
// after its last average, redone from there), as one step is: every complete world of a step must
// have taken the same rows between them, and a step redone in the same world (after a restart from
// a checkpoint) the same rows at each position. With backup workers, a step's mask in a world says
// which positions' rows it took (the others' are served again by the next step): those must all
// have recorded it, and only theirs count; a redone step's rows may differ (earlier masks may), so
// each position's last take is the step's. A world that recorded no mask for a step another world
// has one for never had it applied (its membership regrouped during it); where no world has one
// (an elastic job's lone member, which takes every row), the step is read as without backups.
// Checked here with Boost.Test.
#pragma once

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace dtrain::testing {

// Row i of the file carries id ids[i]; two features and a label beside it. Returns the ids.
inline std::vector<int> WriteRowsWithIds(const std::string& path, int rows) {
  std::vector<int> ids(static_cast<std::size_t>(rows));
  std::iota(ids.begin(), ids.end(), 0);
  std::mt19937 rng(7);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::ofstream out(path);
  out << "id,a,b,label\n";
  for (int i = 0; i < rows; ++i) {
    const int id = ids[static_cast<std::size_t>(i)];
    const int label = id % 2;
    out << id << ',' << (label ? 1.5 : -1.5) + 0.001 * (i % 97) << ',' << 0.01 * (i % 13) << ','
        << label << '\n';
  }
  return ids;
}

// A job of cluster.mode `mode` (synchronous unless told) over WriteRowsWithIds's file: an MLP slow
// enough a step for kills to land mid-run, `epochs` epochs of `batch_size` rows a replica, a
// checkpoint every 50 steps; `cluster` is the [cluster] section's other keys, `max_restarts`
// restart.max_restarts.
inline std::string RowsWithIdsJob(const std::string& name, const std::string& csv, int epochs,
                                  int batch_size, const std::string& cluster, int max_restarts,
                                  const std::string& mode = "sync") {
  std::ostringstream job;
  job << "name = \"" << name << "\"\n[data]\nformat = \"csv\"\ntrain = \"" << csv
      << "\"\nlabel_column = \"label\"\nscale = \"standardize\"\n"
      << "[model]\ntype = \"mlp\"\nhidden = [1024, 1024]\n"
      << "[train]\nepochs = " << epochs << "\nbatch_size = " << batch_size
      << "\nseed = 9\n[optimizer]\nlr = 0.01\n[cluster]\n"
      << cluster << "mode = \"" << mode
      << "\"\n[checkpoint]\nevery_steps = 50\n[restart]\nmax_restarts = " << max_restarts << "\n";
  return job.str();
}

// A variable of the tests' own set for the daemon (and so its jobs' processes) while a test runs:
// DTRAIN_RECORD_ROWS, or DTRAIN_STRAGGLE (daemon/runner/straggler.h).
class DaemonEnvironment {
 public:
  DaemonEnvironment(std::string name, const std::string& value) : name_(std::move(name)) {
    setenv(name_.c_str(), value.c_str(), 1);
  }
  ~DaemonEnvironment() { unsetenv(name_.c_str()); }
  DaemonEnvironment(const DaemonEnvironment&) = delete;
  DaemonEnvironment& operator=(const DaemonEnvironment&) = delete;

 private:
  std::string name_;
};

struct RecordedRows : DaemonEnvironment {
  explicit RecordedRows(const std::string& prefix)
      : DaemonEnvironment("DTRAIN_RECORD_ROWS", prefix) {}
};

struct TakenSteps {
  std::map<std::pair<int, int>, std::vector<int>> rows;  // (epoch, batch): the step's rows
  int redone = 0;          // lines that repeated a (step, world, position) already recorded
  int smaller_worlds = 0;  // steps taken by fewer replicas than the job's workers
  int left_out = 0;  // backup workers: positions whose slice a step's mask left out, every step
  // (epoch, batch): what was recorded of a step no membership recorded whole, for messages
  std::map<std::pair<int, int>, std::string> incomplete;
};

namespace recorded {

using Step = std::pair<int, int>;  // (epoch, batch)

// What the files hold: every take of each position's rows, in the order recorded, and each
// (step, world)'s mask as each file recorded it last (files without one for it left out).
struct Lines {
  std::map<Step, std::map<int, std::map<int, std::vector<std::vector<int>>>>> takes;
  std::map<std::pair<Step, int>, std::vector<std::uint64_t>> masks;
  bool masked = false;  // a mask line was read (the job has backup workers)
};

inline void ReadFile(std::istream& in, Lines& lines) {
  // This file's mask of each (step, world): a mask line sets those of its steps; a row line takes
  // its step again, whose mask is then the new take's (none, until it is applied).
  std::map<std::pair<Step, int>, std::uint64_t> masks;
  std::string line;
  // A killed writer's last line may lack its newline (and a part of its fields): dropped.
  while (std::getline(in, line) && !in.eof()) {
    std::istringstream fields(line);
    int epoch = -1, batch = -1;
    if (line.starts_with("T ")) {
      fields.ignore(2);
      int world = 0;
      if (!(fields >> epoch >> batch >> world)) continue;
      lines.masked = true;
      int later = 0;
      for (std::uint64_t mask; fields >> mask; ++later)
        masks[{{epoch, batch + later}, world}] = mask;
      continue;
    }
    int world = 0, position = -1;
    if (!(fields >> epoch >> batch >> world >> position)) continue;
    std::vector<int> rows;
    for (int row; fields >> row;) rows.push_back(row);
    lines.takes[{epoch, batch}][world][position].push_back(std::move(rows));
    masks.erase({{epoch, batch}, world});
  }
  for (const auto& [step, mask] : masks) lines.masks[step].push_back(mask);
}

// The step's mask in `world`, where a file recorded one: every file that did must agree.
inline std::optional<std::uint64_t> MaskOf(const Lines& lines, Step step, int world) {
  const auto at = lines.masks.find({step, world});
  if (at == lines.masks.end()) return std::nullopt;
  for (const std::uint64_t mask : at->second) {
    BOOST_TEST(mask == at->second.front(), "the replicas recorded different masks for epoch "
                                               << step.first << " batch " << step.second
                                               << " in a world of " << world);
  }
  return at->second.front();
}

// Whether any world recorded a mask for the step.
inline bool AnyMask(const Lines& lines, Step step) {
  const auto at = lines.masks.lower_bound({step, 0});
  return at != lines.masks.end() && at->first.first == step;
}

inline bool Taken(std::optional<std::uint64_t> mask, int position) {
  return !mask || ((*mask >> position) & 1u) != 0;
}

}  // namespace recorded

// Without masks (no backup workers), a step redone in the same world must take the same rows at
// each position. With them, a step's rows follow the masks of the steps before it, which a redo
// may draw otherwise: the last take of each position is the step's, and only the positions its
// mask took count.
inline TakenSteps ReadTakenSteps(const std::string& prefix, int ranks) {
  recorded::Lines lines;
  for (int rank = 0; rank < ranks; ++rank) {
    std::ifstream in(prefix + "." + std::to_string(rank));
    BOOST_REQUIRE_MESSAGE(in, "rank " << rank << " recorded nothing");
    recorded::ReadFile(in, lines);
  }
  const bool masked = lines.masked;
  TakenSteps taken;
  for (const auto& [step, worlds] : lines.takes) {
    const bool any_mask = recorded::AnyMask(lines, step);
    std::vector<int> chosen;
    bool complete = false;
    std::optional<std::uint64_t> mask;
    for (const auto& [world, positions] : worlds) {
      mask = recorded::MaskOf(lines, step, world);
      // Never applied in this world: another world's mask says which took it.
      if (any_mask && !mask) continue;
      std::vector<int> rows;
      int recorded_taken = 0, left_out = 0;
      for (int position = 0; position < world; ++position) {
        if (!recorded::Taken(mask, position)) {
          ++left_out;
          continue;
        }
        const auto at = positions.find(position);
        if (at == positions.end()) continue;
        ++recorded_taken;
        const std::vector<std::vector<int>>& takes = at->second;
        for (const std::vector<int>& again : takes) {
          BOOST_TEST((masked || again == takes.front()),
                     "position " << position << " of " << world
                                 << " took other rows when it redid epoch " << step.first
                                 << " batch " << step.second);
        }
        const std::vector<int>& part = masked ? takes.back() : takes.front();
        rows.insert(rows.end(), part.begin(), part.end());
      }
      for (const auto& [position, takes] : positions) {
        taken.redone += static_cast<int>(takes.size()) - 1;
      }
      if (recorded_taken + left_out != world) continue;
      std::sort(rows.begin(), rows.end());
      if (complete) {
        BOOST_TEST(rows == chosen, "two memberships took different rows in epoch "
                                       << step.first << " batch " << step.second);
        continue;
      }
      complete = true;
      chosen = std::move(rows);
      taken.left_out += left_out;
      if (world < ranks) ++taken.smaller_worlds;
    }
    if (complete) {
      taken.rows[step] = std::move(chosen);
      continue;
    }
    std::ostringstream seen;
    for (const auto& [world, positions] : worlds) {
      seen << " world " << world << ": positions";
      for (const auto& [position, part] : positions) seen << ' ' << position;
      seen << ';';
    }
    if (mask) seen << " mask " << *mask;
    taken.incomplete[step] = seen.str();
  }
  BOOST_TEST_MESSAGE(taken.redone << " recorded steps redone, " << taken.smaller_worlds
                                  << " steps trained by a smaller membership, " << taken.left_out
                                  << " replicas' slices left out by their step's mask");
  return taken;
}

// Each of `epochs` epochs of `steps_per_epoch` steps took every id of `ids` (the file's, by row)
// exactly once over its steps: none twice, none missing.
inline void CheckEveryIdOncePerEpoch(const TakenSteps& steps, const std::vector<int>& ids,
                                     int epochs, int steps_per_epoch) {
  std::vector<int> every(ids.size());
  std::iota(every.begin(), every.end(), 0);
  for (int epoch = 0; epoch < epochs; ++epoch) {
    BOOST_TEST_CONTEXT("epoch " << epoch) {
      std::vector<int> taken;
      for (int batch = 0; batch < steps_per_epoch; ++batch) {
        const auto step = steps.rows.find({epoch, batch});
        BOOST_TEST_REQUIRE(
            (step != steps.rows.end()),
            "no membership recorded all of batch "
                << batch << ":"
                << (steps.incomplete.count({epoch, batch}) ? steps.incomplete.at({epoch, batch})
                                                           : std::string(" nothing")));
        for (int row : step->second) taken.push_back(ids.at(static_cast<std::size_t>(row)));
      }
      std::sort(taken.begin(), taken.end());
      BOOST_TEST(taken == every);
    }
  }
}

}  // namespace dtrain::testing
