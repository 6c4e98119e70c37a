// The stop a worker names in worker_done: every value keeps its wire name (the protocol's words,
// daemon/control_protocol.md) and reads back as itself; a name nobody wrote is nullopt, not a stop.
#include "daemon/worker/worker_stop.h"

#include <boost/test/unit_test.hpp>

namespace dtrain::worker {
namespace worker_stop_test {

BOOST_AUTO_TEST_SUITE(worker_stop)

BOOST_AUTO_TEST_CASE(every_stop_keeps_its_wire_name_and_reads_back_as_itself) {
  const std::pair<WorkerStop, const char*> expected[] = {
      {WorkerStop::kCompleted, "completed"},           {WorkerStop::kTarget, "target"},
      {WorkerStop::kRequested, "requested"},           {WorkerStop::kNoData, "no_data"},
      {WorkerStop::kOutOfMemory, "out_of_memory"},     {WorkerStop::kDiverged, "diverged"},
      {WorkerStop::kUnsupportedCpu, "unsupported_cpu"}};
  for (const auto& [stop, name] : expected) {
    BOOST_TEST(WireName(stop) == name);
    BOOST_TEST((ParseWorkerStop(name) == stop), name);
  }
  BOOST_TEST(!ParseWorkerStop("").has_value());
  BOOST_TEST(!ParseWorkerStop("target reached").has_value());
}

BOOST_AUTO_TEST_CASE(only_a_stop_no_restart_can_mend_is_hopeless) {
  BOOST_TEST(IsHopeless(WorkerStop::kNoData));
  BOOST_TEST(IsHopeless(WorkerStop::kOutOfMemory));
  BOOST_TEST(IsHopeless(WorkerStop::kDiverged));
  BOOST_TEST(IsHopeless(WorkerStop::kUnsupportedCpu));
  BOOST_TEST(!IsHopeless(WorkerStop::kCompleted));
  BOOST_TEST(!IsHopeless(WorkerStop::kTarget));
  BOOST_TEST(!IsHopeless(WorkerStop::kRequested));
}

BOOST_AUTO_TEST_CASE(a_trainers_stop_reason_is_named_as_the_worker_reports_it) {
  BOOST_TEST((FromStopReason(train::StopReason::kCompleted) == WorkerStop::kCompleted));
  BOOST_TEST((FromStopReason(train::StopReason::kTargetReached) == WorkerStop::kTarget));
  BOOST_TEST((FromStopReason(train::StopReason::kRequested) == WorkerStop::kRequested));
  // Stopping early finishes as completing does; the worker's reason says the rest.
  BOOST_TEST((FromStopReason(train::StopReason::kEarlyStopped) == WorkerStop::kCompleted));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace worker_stop_test
}  // namespace dtrain::worker
