// Shared-memory segments: a segment larger than /dev/shm has room for is refused when it is
// created, not left to kill its users with SIGBUS at the first touch. Run in a child process
// with its own mount namespace and a 1 MiB tmpfs on /dev/shm (root only; skipped elsewhere).
#include "core/dist/shm_segment.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstring>
#include <string>

namespace dtrain::dist {
namespace shm_segment_test {

constexpr int kNoNamespace = 77;  // the child could not make its own /dev/shm (not root)

// In the child: 0 when a 4 MiB segment is refused naming the reservation and a 256 KiB one is
// made and written to end to end; another code for each way that fails.
int TryInSmallShm() {
  if (::unshare(CLONE_NEWNS) != 0) return kNoNamespace;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return kNoNamespace;
  if (::mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=1m") != 0) return kNoNamespace;
  Result<std::string> big_name = RandomSegmentName();
  if (!big_name.ok()) return 2;
  Result<ShmMapping> big = CreateShmSegment(big_name.value(), std::size_t{4} << 20);
  if (big.ok()) return 3;
  if (big.status().message().find("reserving") == std::string::npos) return 4;
  Result<std::string> small_name = RandomSegmentName();
  if (!small_name.ok()) return 2;
  Result<ShmMapping> small = CreateShmSegment(small_name.value(), std::size_t{256} << 10);
  if (!small.ok()) return 5;
  std::memset(small.value().data(), 0x5a, std::size_t{256} << 10);
  UnlinkShmSegment(small_name.value());
  return 0;
}

BOOST_AUTO_TEST_SUITE(dist_shm_segment)

BOOST_AUTO_TEST_CASE(a_segment_without_room_in_dev_shm_is_refused_at_creation) {
  const pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) ::_exit(TryInSmallShm());
  int status = 0;
  BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
  BOOST_REQUIRE_MESSAGE(WIFEXITED(status), "the child died of signal " << WTERMSIG(status));
  if (WEXITSTATUS(status) == kNoNamespace) {
    BOOST_TEST_MESSAGE("skipped: a mount namespace with its own /dev/shm needs root");
    return;
  }
  BOOST_TEST(WEXITSTATUS(status) == 0,
             "child exit " << WEXITSTATUS(status)
                           << " (3: made without room, 4: error not naming the reservation, "
                              "5: a segment with room refused)");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace shm_segment_test
}  // namespace dtrain::dist
