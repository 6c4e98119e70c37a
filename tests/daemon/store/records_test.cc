#include "daemon/store/records.h"

#include <boost/test/unit_test.hpp>
#include <string>

namespace dtrain::store {
namespace records_test {

constexpr JobState kAllStates[] = {JobState::kQueued,     JobState::kStarting,  JobState::kRunning,
                                   JobState::kRecovering, JobState::kSucceeded, JobState::kFailed,
                                   JobState::kCancelled};

BOOST_AUTO_TEST_SUITE(store_records)

BOOST_AUTO_TEST_CASE(state_names_round_trip_and_are_the_stored_words) {
  for (JobState s : kAllStates) {
    Result<JobState> parsed = ParseJobState(JobStateName(s));
    BOOST_REQUIRE(parsed.ok());
    BOOST_TEST((parsed.value() == s));
  }
  BOOST_TEST(JobStateName(JobState::kCancelled) == "cancelled");
  Result<JobState> bad = ParseJobState("canceled");
  BOOST_REQUIRE(!bad.ok());
  BOOST_TEST(bad.status().message().find("'canceled'") != std::string::npos);
  BOOST_TEST(bad.status().message().find("cancelled") != std::string::npos);
  for (WorkerState s : {WorkerState::kRunning, WorkerState::kExited, WorkerState::kKilled}) {
    BOOST_TEST((ParseWorkerState(WorkerStateName(s)).value() == s));
  }
}

BOOST_AUTO_TEST_CASE(lifecycle_allows_the_documented_transitions_only) {
  using enum JobState;
  BOOST_TEST(IsValidTransition(kQueued, kStarting));
  BOOST_TEST(IsValidTransition(kStarting, kRunning));
  BOOST_TEST(IsValidTransition(kStarting, kRecovering));  // the worker died before training
  BOOST_TEST(!IsValidTransition(kQueued, kRecovering));
  BOOST_TEST(IsValidTransition(kRunning, kRecovering));
  BOOST_TEST(IsValidTransition(kRecovering, kRunning));
  BOOST_TEST(IsValidTransition(kRunning, kSucceeded));
  BOOST_TEST(IsValidTransition(kQueued, kCancelled));
  BOOST_TEST(IsValidTransition(kRecovering, kFailed));
  BOOST_TEST(!IsValidTransition(kQueued, kRunning));
  BOOST_TEST(!IsValidTransition(kQueued, kSucceeded));
  BOOST_TEST(!IsValidTransition(kRunning, kRunning));
  BOOST_TEST(!IsValidTransition(kRunning, kQueued));
  // A failed or cancelled job may be queued again (an explicit resume), a succeeded one too (an
  // ASHA promotion: more steps); nothing else leaves a terminal state.
  BOOST_TEST(IsValidTransition(kFailed, kQueued));
  BOOST_TEST(IsValidTransition(kCancelled, kQueued));
  BOOST_TEST(IsValidTransition(kSucceeded, kQueued));
  for (JobState from : kAllStates) {
    BOOST_TEST(IsTerminal(from) == (from == kSucceeded || from == kFailed || from == kCancelled));
    for (JobState to : kAllStates) {
      if (IsTerminal(from) && to != kQueued) BOOST_TEST(!IsValidTransition(from, to));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace records_test
}  // namespace dtrain::store
