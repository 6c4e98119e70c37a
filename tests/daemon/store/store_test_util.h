// Helpers for the run store tests: a self-deleting temporary directory, sample records and
// checkpoints, a bit-exact checkpoint comparison and raw SQL access to a store file.
//
//   TempStoreDir dir;   // tests/common/temp_dir.h
//   std::unique_ptr<Store> store = OpenStore(dir.Path("dtrain.db"));
//   BOOST_TEST(SameBits(SampleCheckpoint(100, 64), loaded));
//
// One thread at a time, except that distinct helpers' results are independent values.
#pragma once

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include "common/temp_dir.h"
#include "daemon/store/checkpoint.h"
#include "daemon/store/sqlite.h"
#include "daemon/store/store.h"

namespace dtrain::store::testing {

using TempStoreDir = dtrain::testing::TempDir;

inline std::unique_ptr<Store> OpenStore(const std::string& path) {
  Result<std::unique_ptr<Store>> store = Store::Open(path);
  BOOST_REQUIRE_MESSAGE(store.ok(), store.status().message());
  return std::move(store).value();
}

// A second, raw connection to a store file, for inspecting or damaging it behind the store.
inline Database OpenRaw(const std::string& path) {
  Result<Database> db = Database::Open(path, Database::kExisting);
  BOOST_REQUIRE_MESSAGE(db.ok(), db.status().message());
  BOOST_REQUIRE(db.value().Exec("PRAGMA busy_timeout = 10000").ok());
  return std::move(db).value();
}

inline JobRecord SampleJob(std::string name) {
  JobRecord job;
  job.name = std::move(name);
  job.owner_uid = 1000;
  job.owner_gid = 1001;
  job.priority = 5;
  job.spec_toml = "[model]\ntype = \"mlp\"\n# \xc3\xa9t\xc3\xa9\n";
  return job;
}

// A job of SampleJob(name) created in `store` and moved on to running; its id.
inline std::int64_t RunningJob(Store& store, const std::string& name) {
  const std::int64_t id = store.CreateJob(SampleJob(name)).value();
  BOOST_REQUIRE(store.SetJobState(id, JobState::kStarting, "starting").ok());
  BOOST_REQUIRE(store.SetJobState(id, JobState::kRunning, "running").ok());
  return id;
}

// Deterministic contents that differ with step, including values whose bits matter: NaN with
// a payload, -0, infinities and a subnormal.
inline CheckpointData SampleCheckpoint(std::int64_t step, std::size_t floats) {
  CheckpointData c;
  c.step = step;
  c.epoch = static_cast<std::uint64_t>(step / 10);
  c.batch = static_cast<std::uint64_t>(step % 10);
  c.seed = 0x0123456789abcdefULL;
  c.model_spec = "mlp inputs=4 hidden=8 outputs=3";
  c.optimizer_steps = static_cast<std::uint64_t>(step);
  c.params.resize(floats);
  for (std::size_t i = 0; i < floats; ++i) {
    c.params[i] = std::sin(static_cast<float>(i) + static_cast<float>(step)) * 3.0f;
  }
  if (floats >= 5) {
    std::uint32_t payload_nan_bits = 0x7fc01234;
    std::memcpy(&c.params[0], &payload_nan_bits, sizeof(float));
    c.params[1] = -0.0f;
    c.params[2] = std::numeric_limits<float>::infinity();
    c.params[3] = -std::numeric_limits<float>::infinity();
    c.params[4] = std::numeric_limits<float>::denorm_min();
  }
  c.optimizer_state.resize(2);
  for (std::size_t v = 0; v < 2; ++v) {
    c.optimizer_state[v].resize(floats);
    for (std::size_t i = 0; i < floats; ++i) {
      c.optimizer_state[v][i] = static_cast<float>(i * (v + 2)) / 7.0f + static_cast<float>(step);
    }
  }
  return c;
}

inline bool SameBits(const math::FloatBuffer& a, const math::FloatBuffer& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

inline bool SameBits(const CheckpointData& a, const CheckpointData& b) {
  if (a.step != b.step || a.epoch != b.epoch || a.batch != b.batch || a.seed != b.seed ||
      a.model_spec != b.model_spec || a.optimizer_steps != b.optimizer_steps ||
      !SameBits(a.params, b.params) || a.optimizer_state.size() != b.optimizer_state.size() ||
      a.clocks != b.clocks || !(a.early_stopping == b.early_stopping)) {
    return false;
  }
  for (std::size_t i = 0; i < a.optimizer_state.size(); ++i) {
    if (!SameBits(a.optimizer_state[i], b.optimizer_state[i])) return false;
  }
  return true;
}

inline bool Contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

}  // namespace dtrain::store::testing
