// Checks shared by the configuration tests: where the test data lives, job text parsed inline,
// and what a failed load must have reported (file, line, column, key and a piece of each message,
// in order).
//
//   const config::JobConfig job = MustParseInline("[data]\nformat = \"synthetic\"\n");
//   CheckDiagnostics(LoadJobFile(path, {}), {{path, 5, 8, "data.rows", "must be an integer"}});
//   const config::Diagnostic d = Single(ParseDaemonConfigText("max_jobs = 2\n", "d.toml"));
//   CheckClusterWrittenBack(job, "hierarchy = \"flat\"");  // --resolved keeps it, reads it back
//
// Works with any load result that has ok() and a `diagnostics` vector (LoadResult,
// DaemonConfigLoad). One thread at a time (Boost.Test assertions).
#pragma once

#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "config/job.h"
#include "config/job_file.h"

namespace dtrain::testing {

// tests/data: $DTRAIN_TEST_DATA under ctest, else beside this source file.
inline std::filesystem::path TestData() {
  if (const char* dir = std::getenv("DTRAIN_TEST_DATA")) return dir;
  return std::filesystem::path(__FILE__).parent_path().parent_path() / "data";
}

// Job-file text parsed as "inline.toml", relative paths from "/".
inline config::LoadResult ParseInline(const std::string& text) {
  return config::ParseJobText(text, "inline.toml", {}, "/");
}

// The job of `text`, which must load without a diagnostic (any is printed).
inline config::JobConfig MustParseInline(const std::string& text) {
  const config::LoadResult r = ParseInline(text);
  for (const config::Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(r.ok());
  return *r.job;
}

// One expected diagnostic: where, which key, and a piece of the message.
struct Expected {
  std::string file;
  int line, column;
  std::string key;
  std::string message_part;
};

template <typename R>
void CheckDiagnostics(const R& r, const std::vector<Expected>& expected) {
  BOOST_TEST(!r.ok());
  for (const config::Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE_EQUAL(r.diagnostics.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const config::Diagnostic& d = r.diagnostics[i];
    const Expected& e = expected[i];
    BOOST_TEST_CONTEXT("diagnostic " << i << ": " << FormatDiagnostic(d)) {
      BOOST_TEST(d.file == e.file);
      BOOST_TEST(d.line == e.line);
      BOOST_TEST(d.column == e.column);
      BOOST_TEST(d.key == e.key);
      BOOST_TEST(d.message.find(e.message_part) != std::string::npos,
                 "message lacks '" << e.message_part << "'");
    }
  }
}

// `job` written back with every key and with those that apply (FormatResolvedJob): each text
// holds the whole line `line` and reads back to the same [cluster].
inline void CheckClusterWrittenBack(const config::JobConfig& job, const std::string& line) {
  for (const config::ResolvedKeys keys :
       {config::ResolvedKeys::kAll, config::ResolvedKeys::kApplicable}) {
    const std::string text = config::FormatResolvedJob(job, keys);
    BOOST_TEST(text.find("\n" + line + "\n") != std::string::npos, "no " << line << " in " << text);
    const config::LoadResult back = ParseInline(text);
    BOOST_REQUIRE(back.ok());
    BOOST_TEST((back.job->cluster == job.cluster));
  }
}

// `job` written back with every key and with those that apply: neither text names `key`.
inline void CheckNotWritten(const config::JobConfig& job, const std::string& key) {
  for (const config::ResolvedKeys keys :
       {config::ResolvedKeys::kAll, config::ResolvedKeys::kApplicable}) {
    BOOST_TEST(config::FormatResolvedJob(job, keys).find(key) == std::string::npos);
  }
}

// The one diagnostic of a load that must fail with exactly one.
template <typename R>
config::Diagnostic Single(const R& r) {
  for (const config::Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(!r.ok());
  BOOST_REQUIRE_EQUAL(r.diagnostics.size(), 1u);
  return r.diagnostics[0];
}

}  // namespace dtrain::testing
