// NetnsReady: the Boost.Test precondition of the suites that need network namespaces — they are
// skipped, saying why, where NetnsAvailable() is false (not root, no `ip`).
//
//   BOOST_AUTO_TEST_SUITE(multi_host, *boost::unit_test::precondition(NetnsReady))
//
// Safe for concurrent use.
#pragma once

#include <boost/test/unit_test.hpp>
#include <string>

#include "cluster/netns_cluster.h"

namespace dtrain::testing {

inline boost::test_tools::assertion_result NetnsReady(boost::unit_test::test_unit_id) {
  std::string why;
  if (NetnsAvailable(&why)) return true;
  boost::test_tools::assertion_result skip(false);
  skip.message() << "network namespaces unavailable, cluster tests skipped: " << why;
  return skip;
}

}  // namespace dtrain::testing
