// host_info: "HOST:PORT" splitting and joining, and finding the IPv4 address this host is
// reached at, against the machine's own resolver and routing table (loopback only).
#include "core/net/host_info.h"

#include <boost/test/unit_test.hpp>

namespace dtrain::net {
namespace host_info_test {

BOOST_AUTO_TEST_SUITE(host_info)

BOOST_AUTO_TEST_CASE(host_port_splits_and_joins_back) {
  for (const char* text : {"10.0.0.1:7070", "[::1]:7070", "node-1.lab:1", "localhost:65535"}) {
    const std::optional<HostPort> split = SplitHostPort(text);
    BOOST_REQUIRE_MESSAGE(split.has_value(), text);
    BOOST_TEST(JoinHostPort(split->host, split->port) == text);
  }
  BOOST_TEST(SplitHostPort("[::1]:7070")->host == "::1");
  for (const char* bad : {"10.0.0.1", "::1:7070", ":7070", "h:0", "h:65536", "h:7x"}) {
    BOOST_TEST(!SplitHostPort(bad).has_value(), bad);
  }
}

BOOST_AUTO_TEST_CASE(ipv4_literals_resolve_to_themselves_and_ipv6_to_nothing) {
  BOOST_TEST(ResolveIPv4("10.1.2.3").value_or("none") == "10.1.2.3");
  BOOST_TEST(ResolveIPv4("localhost").value_or("none").starts_with("127."));
  BOOST_TEST(!ResolveIPv4("::1").has_value());
  BOOST_TEST(!ResolveIPv4("no-such-host.invalid").has_value());
}

BOOST_AUTO_TEST_CASE(the_route_to_a_loopback_address_leaves_from_loopback) {
  BOOST_TEST(RouteSourceIPv4("127.0.0.1").value_or("none") == "127.0.0.1");
  BOOST_TEST(RouteSourceIPv4("127.0.0.2").value_or("none").starts_with("127."));
  BOOST_TEST(!RouteSourceIPv4("::1").has_value());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace host_info_test
}  // namespace dtrain::net
