// The parts of model-parallel checkpoints, gathered by step (daemon/server/checkpoint_assembler.h),
// and the one-shot results coroutines wait for (daemon/server/completion.h).
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <optional>
#include <vector>

#include "daemon/server/checkpoint_assembler.h"
#include "daemon/server/completion.h"

namespace dtrain::server {
namespace checkpoint_assembly_test {

store::CheckpointData Part(std::int64_t step, std::uint64_t marker) {
  store::CheckpointData part;
  part.step = step;
  part.seed = marker;
  return part;
}

BOOST_AUTO_TEST_SUITE(checkpoint_assembly)

BOOST_AUTO_TEST_CASE(a_steps_parts_come_out_in_partition_order_once_the_last_has_come) {
  CheckpointAssembler parts(3);
  BOOST_TEST(!parts.Add(2, Part(10, 102)));
  BOOST_TEST(!parts.Add(0, Part(10, 100)));
  BOOST_TEST(!parts.Add(0, Part(20, 200)));  // another step, kept apart
  const std::optional<std::vector<store::CheckpointData>> all = parts.Add(1, Part(10, 101));
  BOOST_TEST_REQUIRE(all.has_value());
  BOOST_TEST(all->size() == 3u);
  for (std::size_t p = 0; p < 3; ++p) {
    BOOST_TEST((*all)[p].step == 10);
    BOOST_TEST((*all)[p].seed == 100 + p);
  }
  // The completed step is forgotten: its parts start over.
  BOOST_TEST(!parts.Add(1, Part(10, 111)));
  BOOST_TEST(!parts.Add(1, Part(20, 201)));
  BOOST_TEST(parts.Add(2, Part(20, 202)).has_value());
}

BOOST_AUTO_TEST_CASE(a_new_attempt_drops_the_parts_of_the_last) {
  CheckpointAssembler parts(2);
  BOOST_TEST(!parts.Add(0, Part(10, 100)));
  parts.Clear();
  BOOST_TEST(!parts.Add(1, Part(10, 101)));
  BOOST_TEST(parts.Add(0, Part(10, 100)).has_value());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(completion)

// Waits for `c` on `io` and returns what the wait got, running `then` once the waiter waits.
template <typename Then>
std::optional<int> WaitFor(asio::io_context& io, Completion<int> c, Then then) {
  std::optional<std::optional<int>> got;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { got = co_await c.Wait(); }, asio::detached);
  io.poll();  // the waiter now waits
  then();
  io.run_for(std::chrono::seconds(30));
  BOOST_TEST_REQUIRE(got.has_value());
  return *got;
}

BOOST_AUTO_TEST_CASE(waiters_get_the_value_set_and_later_waits_return_at_once) {
  asio::io_context io;
  Completion<int> c(io, std::chrono::hours(1));
  BOOST_TEST(WaitFor(io, c, [&] { c.Set(7); }).value_or(0) == 7);
  io.restart();
  c.Set(8);  // changes nothing
  BOOST_TEST(WaitFor(io, c, [] {}).value_or(0) == 7);
}

BOOST_AUTO_TEST_CASE(an_abandoned_or_expired_completion_has_no_value) {
  asio::io_context io;
  Completion<int> abandoned(io, std::chrono::hours(1));
  BOOST_TEST(!WaitFor(io, abandoned, [&] { abandoned.Abandon(); }).has_value());
  io.restart();
  abandoned.Set(3);
  BOOST_TEST(!WaitFor(io, abandoned, [] {}).has_value());
  io.restart();
  Completion<int> expired(io, std::chrono::milliseconds(0));
  BOOST_TEST(!WaitFor(io, expired, [] {}).has_value());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace checkpoint_assembly_test
}  // namespace dtrain::server
