// What the end-to-end tests of `dtrain run` share: the binary under test, the store a run left,
// its checkpoints compared bit for bit, and its JSON summary.
#pragma once

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "common/process.h"
#include "daemon/store/sqlite.h"
#include "daemon/store/store.h"

// Their own namespace: dtrain::cli (the library) has an OpenStore of another signature.
namespace dtrain::cli::run_checks {

inline std::string Bin() {
  const char* bin = std::getenv("DTRAIN_BIN");
  BOOST_REQUIRE_MESSAGE(bin != nullptr, "DTRAIN_BIN is not set (run through ctest)");
  return bin;
}

inline std::unique_ptr<store::Store> OpenStore(const std::string& path) {
  auto s = store::Store::Open(path);
  BOOST_REQUIRE_MESSAGE(s.ok(), s.status().message());
  return std::move(s).value();
}

inline store::CheckpointData Final(const std::string& db, std::int64_t job) {
  auto s = OpenStore(db);
  auto latest = s->LatestCheckpoint(job);
  BOOST_REQUIRE(latest.ok());
  BOOST_REQUIRE(latest.value().checkpoint.has_value());
  return *latest.value().checkpoint;
}

inline bool SameBits(const math::FloatBuffer& a, const math::FloatBuffer& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

inline bool SameState(const store::CheckpointData& a, const store::CheckpointData& b) {
  if (a.step != b.step || !SameBits(a.params, b.params) ||
      a.optimizer_state.size() != b.optimizer_state.size() ||
      a.optimizer_steps != b.optimizer_steps) {
    return false;
  }
  for (std::size_t i = 0; i < a.optimizer_state.size(); ++i) {
    if (!SameBits(a.optimizer_state[i], b.optimizer_state[i])) return false;
  }
  return true;
}

// Waits until the job in `db` has a checkpoint at or past `step`. It only reads: a read-only
// connection, opened anew until the run has made the file and its tables, so that nothing the
// test does can get in the way of the run's own opening of its store.
inline void WaitForCheckpoint(const std::string& db, std::int64_t job, std::int64_t step) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  const std::string query =
      "SELECT coalesce(max(step), -1) FROM checkpoints WHERE job = " + std::to_string(job);
  std::string last = "no store file yet";
  while (std::chrono::steady_clock::now() < deadline) {
    if (std::filesystem::exists(db)) {
      Result<store::Database> reader = store::Database::Open(db, store::Database::kExisting);
      if (reader.ok() && reader.value().Exec("PRAGMA query_only = ON").ok()) {
        const Result<std::int64_t> newest = reader.value().QueryInt(query);
        if (newest.ok() && newest.value() >= step) return;
        last = newest.ok() ? "newest checkpoint at step " + std::to_string(newest.value())
                           : newest.status().message();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  BOOST_FAIL("no checkpoint at step " << step << " within 120 s (" << last << ")");
}

inline nlohmann::json ParseJson(const testing::ProcessResult& r) {
  BOOST_TEST_INFO("stdout: " << r.out << "\nstderr: " << r.err);
  BOOST_REQUIRE(nlohmann::json::accept(r.out));
  return nlohmann::json::parse(r.out);
}

}  // namespace dtrain::cli::run_checks
