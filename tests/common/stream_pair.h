// Two FrameStreams joined by a Unix socket pair, for the net tests: what one end writes the other
// reads, with nothing of TCP's in between.
//
//   StreamPair p = ConnectedStreams();
//   p.client.WriteString(...);  p.server.Read(kGenerous);
#pragma once

#include <sys/socket.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdint>

#include "core/net/frame_stream.h"

namespace dtrain::testing {

// A timeout that only proves that nothing hangs.
inline constexpr std::chrono::seconds kGenerous{5};

struct StreamPair {
  net::FrameStream client;
  net::FrameStream server;
};

inline StreamPair ConnectedStreams(std::uint32_t max_payload = net::kDefaultMaxPayload) {
  int fds[2];
  BOOST_TEST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  return {net::FrameStream(fds[0], max_payload), net::FrameStream(fds[1], max_payload)};
}

}  // namespace dtrain::testing
