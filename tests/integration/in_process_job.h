// A job file read for an in-process reference run: its configuration and its data, as a job's
// process loads them.
//
//   const InProcessJob ref = LoadInProcessJob(dir, text);   // fails the test unless both load
//   runner::ReplicaOptions(ref.job, ref.data.spec, rank);
#pragma once

#include <boost/test/unit_test.hpp>
#include <string>
#include <utility>

#include "common/temp_dir.h"
#include "config/job_file.h"
#include "daemon/runner/job_data.h"

namespace dtrain::testing {

struct InProcessJob {
  config::JobConfig job;
  runner::JobData data;
};

inline InProcessJob LoadInProcessJob(const TempDir& dir, const std::string& text) {
  const config::LoadResult loaded =
      config::ParseJobText(text, dir.Path("reference.toml"), {}, dir.Path(""));
  BOOST_REQUIRE(loaded.ok());
  Result<runner::JobData> data = runner::LoadJobData(*loaded.job);
  BOOST_REQUIRE(data.ok());
  return {*loaded.job, std::move(data).value()};
}

}  // namespace dtrain::testing
