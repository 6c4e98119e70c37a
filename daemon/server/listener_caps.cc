#include "daemon/server/listener_caps.h"

#include <sys/resource.h>

#include <algorithm>

namespace dtrain::server {
namespace {

ConnectionCaps Scaled(ConnectionCaps caps, std::uint64_t fd_limit) {
  auto scale = [fd_limit](std::size_t n) {
    return std::max<std::size_t>(1, static_cast<std::size_t>(n * fd_limit / kFullCapsDescriptors));
  };
  return {scale(caps.total), scale(caps.per_client)};
}

}  // namespace

ListenerCaps ScaledListenerCaps(std::uint64_t fd_limit) {
  if (fd_limit >= kFullCapsDescriptors) return kDefaultListenerCaps;
  const ListenerCaps& d = kDefaultListenerCaps;
  return {Scaled(d.unix_socket, fd_limit), Scaled(d.tcp, fd_limit), Scaled(d.http, fd_limit),
          Scaled(d.streams, fd_limit)};
}

std::uint64_t RaiseDescriptorLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;  // the kernel's default soft limit
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? kFullCapsDescriptors
                                         : static_cast<std::uint64_t>(limit.rlim_cur);
}

}  // namespace dtrain::server
