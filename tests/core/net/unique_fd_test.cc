// UniqueFd (core/unique_fd.h), the owner of the sockets and pipes: it closes what it holds when
// it goes, when reset, and when another is moved into it; it closes nothing it gave up.
#include "core/unique_fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <utility>

namespace dtrain {
namespace unique_fd_test {

bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

// Both ends of a fresh pipe; the test closes what no UniqueFd took.
std::pair<int, int> Pipe() {
  int ends[2];
  BOOST_REQUIRE(::pipe2(ends, O_CLOEXEC) == 0);
  return {ends[0], ends[1]};
}

BOOST_AUTO_TEST_SUITE(unique_fd)

BOOST_AUTO_TEST_CASE(closes_what_it_holds_when_it_goes) {
  const auto [read_end, write_end] = Pipe();
  {
    const UniqueFd owner(read_end);
    BOOST_TEST(static_cast<bool>(owner));
    BOOST_TEST(owner.get() == read_end);
    BOOST_TEST(IsOpen(read_end));
  }
  BOOST_TEST(!IsOpen(read_end));
  ::close(write_end);
}

BOOST_AUTO_TEST_CASE(release_gives_the_descriptor_up_open) {
  const auto [read_end, write_end] = Pipe();
  int released = -1;
  {
    UniqueFd owner(read_end);
    released = owner.release();
    BOOST_TEST(!owner);
    BOOST_TEST(owner.get() == -1);
  }
  BOOST_TEST(released == read_end);
  BOOST_TEST(IsOpen(read_end));
  ::close(read_end);
  ::close(write_end);
}

BOOST_AUTO_TEST_CASE(reset_closes_the_old_one_and_holds_the_new_one) {
  const auto [read_end, write_end] = Pipe();
  UniqueFd owner(read_end);
  owner.reset(write_end);
  BOOST_TEST(!IsOpen(read_end));
  BOOST_TEST(owner.get() == write_end);
  owner.reset();
  BOOST_TEST(!IsOpen(write_end));
  BOOST_TEST(!owner);
}

BOOST_AUTO_TEST_CASE(a_move_hands_ownership_over_and_closes_what_it_replaces) {
  const auto [read_end, write_end] = Pipe();
  UniqueFd first(read_end);
  UniqueFd second(std::move(first));
  BOOST_TEST(!first);  // NOLINT(bugprone-use-after-move): a moved-from owner holds nothing
  BOOST_TEST(second.get() == read_end);
  UniqueFd third(write_end);
  third = std::move(second);
  BOOST_TEST(!IsOpen(write_end));
  BOOST_TEST(third.get() == read_end);
  BOOST_TEST(IsOpen(read_end));
}

BOOST_AUTO_TEST_CASE(an_empty_owner_closes_nothing) {
  UniqueFd none;
  BOOST_TEST(!none);
  none.reset();
  BOOST_TEST(none.get() == -1);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace unique_fd_test
}  // namespace dtrain
