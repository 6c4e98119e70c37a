// A job run through `dtrain run`, interrupted by SIGINT once it has a checkpoint, and then resumed
// beside a straight run of the same job: what tests of exact resumes compare, under each
// checkpoint policy.
//
//   InterruptAndResumeEachPolicy(dir, job_text_for_policy, 20, [](const Resumed& r) {
//     BOOST_TEST(cli::run_checks::SameState(r.straight, r.resumed));
//   });
//
// Each job of these stores is job 1. One thread at a time per TempDir.
#pragma once

#include <signal.h>

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "cmd/run_checks.h"
#include "common/process.h"
#include "common/temp_dir.h"
#include "daemon/store/checkpoint.h"

namespace dtrain::testing {

// Starts the job file `job` with `dtrain run` into the store `db`, stops it with SIGINT once it
// has a checkpoint at or past `first_checkpoint` (the replicas agree on a step to stop at and
// each hands its part to the final checkpoint), and returns the step it stopped at, after
// checking that it exited as interrupted with its newest checkpoint at that step.
inline std::int64_t RunUntilInterrupted(const TempDir& dir, const std::string& job,
                                        const std::string& db, std::int64_t first_checkpoint) {
  auto child =
      StartProcess({EnvPath("DTRAIN_BIN"), "run", job, "--db", db, "--json"}, dir.Path(""));
  cli::run_checks::WaitForCheckpoint(db, 1, first_checkpoint);
  child.Signal(SIGINT);
  const ProcessResult interrupted = child.Wait();
  BOOST_REQUIRE_MESSAGE(interrupted.exit_code == 130, interrupted.err);
  const std::int64_t stopped = cli::run_checks::ParseJson(interrupted)["steps"].get<std::int64_t>();
  BOOST_TEST(cli::run_checks::Final(db, 1).step == stopped);  // every replica's part, at the stop
  return stopped;
}

// The final checkpoints of `job` run straight to step `until` (into a store named after `name`)
// and of db's job resumed to it.
struct Resumed {
  store::CheckpointData straight;
  store::CheckpointData resumed;
};
inline Resumed StraightAndResumed(const TempDir& dir, const std::string& job, const std::string& db,
                                  const std::string& name, std::int64_t until) {
  const std::string steps = "train.steps=" + std::to_string(until);
  const std::string straight_db = dir.Path("straight" + name + ".db");
  const ProcessResult straight = RunProcess(
      {EnvPath("DTRAIN_BIN"), "run", job, "--db", straight_db, "--set", steps}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(straight.exit_code == 0, straight.err);
  const ProcessResult resumed = RunProcess(
      {EnvPath("DTRAIN_BIN"), "run", "--resume", "1", "--db", db, "--set", steps}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  return {cli::run_checks::Final(straight_db, 1), cli::run_checks::Final(db, 1)};
}

// The checkpoint policies resumes are tested under: every 20 steps, and every few milliseconds
// (the writer proposes, the replicas agree on the step).
inline const std::string kCheckpointPolicies[] = {"every_steps = 20\n", "every_seconds = 0.01\n"};

// For each of kCheckpointPolicies: `job_text(policy)` (a job file checkpointing by that line)
// run until interrupted past step `first_checkpoint`, then straight and resumed to 30 steps past
// the stop; checks that the resumed run ended there, and hands both final checkpoints to `check`.
inline void InterruptAndResumeEachPolicy(
    const TempDir& dir, const std::function<std::string(const std::string& policy)>& job_text,
    std::int64_t first_checkpoint, const std::function<void(const Resumed&)>& check) {
  for (const std::string& policy : kCheckpointPolicies) {
    BOOST_TEST_CONTEXT(policy) {
      int n = 1;  // the first name no earlier run in `dir` took
      while (std::filesystem::exists(dir.Path("job" + std::to_string(n) + ".toml"))) ++n;
      const std::string name = std::to_string(n);
      const std::string job = dir.Write("job" + name + ".toml", job_text(policy));
      const std::string db = dir.Path("interrupted" + name + ".db");
      const std::int64_t stopped = RunUntilInterrupted(dir, job, db, first_checkpoint);
      const Resumed r = StraightAndResumed(dir, job, db, name, stopped + 30);
      BOOST_TEST(r.resumed.step == stopped + 30);
      check(r);
    }
  }
}

}  // namespace dtrain::testing
