// For tests of the data order: a CSV file whose rows carry shuffled ids, the environment that
// makes a daemon's replicas record the rows each step took (DTRAIN_RECORD_ROWS,
// daemon/runner/row_recorder.h: one file per rank, a line per completed step,
// "EPOCH BATCH WORLD POSITION ROW ..."), and the reading of those files into the rows each step of
// each epoch took over the whole job.
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
// before it took the step): every complete world of a step must have taken the same rows between
// them, and a step redone in the same world (after a restart from a checkpoint) the same rows at
// each position. Checked here with Boost.Test.
#pragma once

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <fstream>
#include <map>
#include <numeric>
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

// A synchronous job over WriteRowsWithIds's file: an MLP slow enough a step for kills to land
// mid-run, `epochs` epochs of `batch_size` rows a replica, a checkpoint every 50 steps; `cluster`
// is the [cluster] section's keys, `max_restarts` restart.max_restarts.
inline std::string RowsWithIdsJob(const std::string& name, const std::string& csv, int epochs,
                                  int batch_size, const std::string& cluster, int max_restarts) {
  std::ostringstream job;
  job << "name = \"" << name << "\"\n[data]\nformat = \"csv\"\ntrain = \"" << csv
      << "\"\nlabel_column = \"label\"\nscale = \"standardize\"\n"
      << "[model]\ntype = \"mlp\"\nhidden = [1024, 1024]\n"
      << "[train]\nepochs = " << epochs << "\nbatch_size = " << batch_size
      << "\nseed = 9\n[optimizer]\nlr = 0.01\n[cluster]\n"
      << cluster << "mode = \"sync\"\n[checkpoint]\nevery_steps = 50\n[restart]\nmax_restarts = "
      << max_restarts << "\n";
  return job.str();
}

// Set for the daemon (and so its jobs' processes) while a test runs.
struct RecordedRows {
  explicit RecordedRows(const std::string& prefix) {
    setenv("DTRAIN_RECORD_ROWS", prefix.c_str(), 1);
  }
  ~RecordedRows() { unsetenv("DTRAIN_RECORD_ROWS"); }
  RecordedRows(const RecordedRows&) = delete;
  RecordedRows& operator=(const RecordedRows&) = delete;
};

struct TakenSteps {
  std::map<std::pair<int, int>, std::vector<int>> rows;  // (epoch, batch): the step's rows
  int redone = 0;          // lines that repeated a (step, world, position) already recorded
  int smaller_worlds = 0;  // steps taken by fewer replicas than the job's workers
  // (epoch, batch): what was recorded of a step no membership recorded whole, for messages
  std::map<std::pair<int, int>, std::string> incomplete;
};

inline TakenSteps ReadTakenSteps(const std::string& prefix, int ranks) {
  // (epoch, batch) -> world -> position -> rows
  std::map<std::pair<int, int>, std::map<int, std::map<int, std::vector<int>>>> lines;
  TakenSteps taken;
  for (int rank = 0; rank < ranks; ++rank) {
    std::ifstream in(prefix + "." + std::to_string(rank));
    BOOST_REQUIRE_MESSAGE(in, "rank " << rank << " recorded nothing");
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      int epoch = -1, batch = -1, world = 0, position = -1;
      if (!(fields >> epoch >> batch >> world >> position)) continue;  // a killed writer's last
      std::vector<int> rows;
      for (int row; fields >> row;) rows.push_back(row);
      auto& by_position = lines[{epoch, batch}][world];
      const auto [at, fresh] = by_position.try_emplace(position, rows);
      if (!fresh) {
        ++taken.redone;
        BOOST_TEST(at->second == rows, "position " << position << " of " << world
                                                   << " took other rows when it redid epoch "
                                                   << epoch << " batch " << batch);
      }
    }
  }
  for (const auto& [step, worlds] : lines) {
    std::vector<int> chosen;
    bool complete = false;
    for (const auto& [world, positions] : worlds) {
      if (static_cast<int>(positions.size()) != world) continue;
      std::vector<int> rows;
      for (const auto& [position, part] : positions)
        rows.insert(rows.end(), part.begin(), part.end());
      std::sort(rows.begin(), rows.end());
      if (complete) {
        BOOST_TEST(rows == chosen, "two memberships took different rows in epoch "
                                       << step.first << " batch " << step.second);
        continue;
      }
      complete = true;
      chosen = std::move(rows);
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
    taken.incomplete[step] = seen.str();
  }
  BOOST_TEST_MESSAGE(taken.redone << " recorded steps redone, " << taken.smaller_worlds
                                  << " steps trained by a smaller membership");
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
