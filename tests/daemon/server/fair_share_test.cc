// The scheduler's rule among queued jobs and the limits of a submission (fair_share.h,
// submit_limits.h), as pure functions.
#include "daemon/server/fair_share.h"

#include <boost/test/unit_test.hpp>
#include <string>

#include "config/job.h"
#include "daemon/server/submit_limits.h"

namespace dtrain::server {
namespace fair_share_test {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

BOOST_AUTO_TEST_SUITE(fair_share_rule)

BOOST_AUTO_TEST_CASE(priority_then_the_least_used_user_then_submission_order) {
  const UsageByUser usage = {{1001, {2, 8}}, {1002, {1, 1}}};
  // Priority first, whatever the users hold.
  BOOST_TEST(StartsBefore({9, 5, 1001}, {1, 0, 1003}, usage));
  // Equal priorities: the user holding fewer cores (1003 holds none, 1002 one core).
  BOOST_TEST(StartsBefore({9, 0, 1003}, {1, 0, 1002}, usage));
  BOOST_TEST(StartsBefore({9, 0, 1002}, {1, 0, 1001}, usage));
  // The same user, or the same share: the order submitted.
  BOOST_TEST(StartsBefore({3, 0, 1001}, {4, 0, 1001}, usage));
  BOOST_TEST(!StartsBefore({4, 0, 1001}, {3, 0, 1001}, usage));
  BOOST_TEST(StartsBefore({3, 0, 1004}, {4, 0, 1005}, usage));
}

BOOST_AUTO_TEST_CASE(a_users_share_is_bounded_by_jobs_and_cores) {
  config::DaemonLimits limits;
  const UsageByUser usage = {{1001, {2, 6}}};
  BOOST_TEST(OverUserShare(1001, 4, usage, limits).empty());  // no limits: only the host's
  limits.jobs_per_user = 2;
  BOOST_TEST(Has(OverUserShare(1001, 1, usage, limits), "uid 1001 runs 2 jobs"));
  BOOST_TEST(OverUserShare(1002, 1, usage, limits).empty());
  limits.jobs_per_user = 0;
  limits.cores_per_user = 8;
  BOOST_TEST(OverUserShare(1001, 2, usage, limits).empty());
  BOOST_TEST(Has(OverUserShare(1001, 3, usage, limits), "cores_per_user = 8"));
}

BOOST_AUTO_TEST_CASE(priorities_above_the_bound_need_a_named_user) {
  config::DaemonLimits limits;
  limits.max_priority = 5;
  limits.priority_users = {"alice"};
  BOOST_TEST(MayRaisePriority(0, "root", 0, limits));
  BOOST_TEST(MayRaisePriority(1001, "bob", 1001, limits));  // the daemon's own user
  BOOST_TEST(MayRaisePriority(1002, "alice", 0, limits));
  BOOST_TEST(!MayRaisePriority(1001, "bob", 0, limits));
  BOOST_TEST(!MayRaisePriority(1003, "", 0, limits));  // no account: no name to match
  config::JobConfig job;
  job.priority = 6;
  BOOST_TEST(Has(ApplySubmitLimits(job, 1, false, limits, 0), "priority 6 is above the 5"));
  BOOST_TEST(ApplySubmitLimits(job, 1, true, limits, 0).empty());
  job.priority = -100;
  BOOST_TEST(ApplySubmitLimits(job, 1, false, limits, 0).empty());
}

BOOST_AUTO_TEST_CASE(memory_limits_are_bounded_and_defaulted) {
  constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
  config::DaemonLimits limits;
  config::JobConfig job;
  job.memory_limit = 1000 * 1024 * kGiB;  // 1000 TiB
  BOOST_TEST(Has(ApplySubmitLimits(job, 1, false, limits, 16 * kGiB), "this host's 16 GiB"));
  limits.max_memory_limit = 4 * kGiB;
  BOOST_TEST(Has(ApplySubmitLimits(job, 1, false, limits, 16 * kGiB), "max_memory_limit"));
  // None set: the maximum bounds it, or the default when there is one.
  job.memory_limit = 0;
  BOOST_TEST(ApplySubmitLimits(job, 1, false, limits, 16 * kGiB).empty());
  BOOST_TEST(job.memory_limit == 4 * kGiB);
  limits.default_memory_limit = 2 * kGiB;
  job.memory_limit = 0;
  BOOST_TEST(ApplySubmitLimits(job, 1, false, limits, 16 * kGiB).empty());
  BOOST_TEST(job.memory_limit == 2 * kGiB);
  job.memory_limit = 3 * kGiB;  // its own, within the maximum, is kept
  BOOST_TEST(ApplySubmitLimits(job, 1, false, limits, 16 * kGiB).empty());
  BOOST_TEST(job.memory_limit == 3 * kGiB);
}

BOOST_AUTO_TEST_CASE(a_job_larger_than_a_users_cores_is_refused_at_once) {
  config::DaemonLimits limits;
  limits.cores_per_user = 4;
  config::JobConfig job;
  BOOST_TEST(Has(ApplySubmitLimits(job, 5, false, limits, 0), "could never start"));
  BOOST_TEST(ApplySubmitLimits(job, 4, false, limits, 0).empty());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace fair_share_test
}  // namespace dtrain::server
