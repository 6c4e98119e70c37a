// Ring all-reduce under faults: a rank that closes its links, dies mid-op (a thread, or a real
// process that exits), stays silent, or runs another op. Every other rank must fail (or, when the
// death came too late to matter to it, hold the full sum), never hang, and say which rank and
// which op; ranks that are not neighbours of a dead rank learn it from the failure notices that
// travel around the ring. The ops get a 60 s timeout and must end in under 30 s: the failure,
// not the deadline, ends them. Each runs with ops driven both ways (RingOptions::caller_sends),
// and with two ranks (the direct exchange) as well as rings; small ranges, whose gather goes both
// ways round the ring, with notices both ways, at 3 to 6 ranks; middle ranges, both ways by
// chunks, at 3 and 4.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <functional>
#include <string>
#include <utility>

#include "core/dist/ring_allreduce.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace ring_failure_test {

using namespace std::chrono_literals;
using testing::Mentions;
using testing::Transport;

constexpr std::uint32_t kOp = 7;
constexpr std::size_t kSize = 100'000;
const RingOptions kOptions{.timeout = 60s, .segment_floats = 1000};
const RingOptions kThreaded{.timeout = 60s, .segment_floats = 1000, .caller_sends = false};
const RingOptions kDrivings[] = {kOptions, kThreaded};

const char* Driving(const RingOptions& options) {
  return options.caller_sends ? "caller sends" : "threaded";
}

// A link that forwards to `inner` until its rank has sent `*sends_left` messages, then dies
// (`die`: close the rank's links, or exit its process) instead of sending.
class DyingLink final : public testing::ForwardingLink {
 public:
  DyingLink(Link* inner, std::atomic<int>* sends_left, std::function<void()> die)
      : ForwardingLink(inner), sends_left_(sends_left), die_(std::move(die)) {}

  Status Send(std::uint32_t tag, std::span<const float> data, Deadline deadline) override {
    if (sends_left_->fetch_sub(1) <= 0) {
      die_();
      return Status::Error("died on purpose");
    }
    return ForwardingLink::Send(tag, data, deadline);
  }

 private:
  std::atomic<int>* const sends_left_;
  const std::function<void()> die_;
};

// One rank's op: reduce its input (`size` floats) with tag `op` over its links, leaving the
// result in `*out`.
Status ReduceAsRank(int rank, int world, const RingLinks& links, std::uint32_t op = kOp,
                    RingOptions options = kOptions, std::vector<float>* out = nullptr,
                    std::size_t size = kSize) {
  RingAllReduce ring(rank, world, links.left, links.right, options);
  std::vector<float> data = testing::Input(rank, size, op);
  Status s = ring.AllReduceSum(data, op);
  if (out != nullptr) *out = std::move(data);
  return s;
}

// Rank `victim`'s links wrapped so that it dies after `sends` messages.
struct Doomed {
  Doomed(const RingLinks& links, int sends, std::function<void()> die)
      : sends_left(sends),
        left(links.left, &sends_left, die),
        right(links.right, &sends_left, die) {}
  RingLinks Links() { return {.left = &left, .right = &right, .owned = {}}; }

  std::atomic<int> sends_left;
  DyingLink left, right;
};

void CheckEveryOtherRankNames(const std::vector<Status>& status, int victim,
                              Clock::time_point start) {
  BOOST_TEST(testing::SecondsSince(start) < 30.0);
  const std::string name = "rank " + std::to_string(victim);
  for (std::size_t r = 0; r < status.size(); ++r) {
    if (static_cast<int>(r) == victim) continue;
    BOOST_TEST_CONTEXT("rank " << r) {
      BOOST_TEST_REQUIRE(!status[r].ok());
      BOOST_TEST_MESSAGE(status[r].message());
      BOOST_TEST(Mentions(status[r].message(), name));
      BOOST_TEST(Mentions(status[r].message(), "op 7"));
    }
  }
}

BOOST_AUTO_TEST_SUITE(dist_ring_failures)

BOOST_AUTO_TEST_CASE(every_rank_names_a_rank_that_closed_its_links) {
  for (Transport transport : testing::kTransports) {
    for (const RingOptions& options : kDrivings) {
      for (const auto& [world, victim] : {std::pair{4, 2}, std::pair{2, 1}}) {
        BOOST_TEST_CONTEXT(transport << ", " << Driving(options) << ", world " << world) {
          std::vector<RingLinks> links = testing::MakeRing(transport, world);
          const Clock::time_point start = Clock::now();
          const std::vector<Status> status = testing::RunRanks(world, [&](int r) {
            const RingLinks& mine = links[static_cast<std::size_t>(r)];
            if (r != victim) return ReduceAsRank(r, world, mine, kOp, options);
            mine.left->Close();
            mine.right->Close();
            return Status::Ok();
          });
          CheckEveryOtherRankNames(status, victim, start);
        }
      }
    }
  }
}

// Runs op 7 over `world` ranks of `transport`, rank `victim` dying after `sends` messages; what
// every rank returned, with the ranks' data.
struct Outcome {
  std::vector<Status> status;
  std::vector<std::vector<float>> data;
  Clock::time_point start;
};

Outcome RunWithVictim(Transport transport, int world, int victim, int sends,
                      const RingOptions& options, std::size_t size = kSize) {
  std::vector<RingLinks> links = testing::MakeRing(transport, world);
  RingLinks& v = links[static_cast<std::size_t>(victim)];
  Doomed doomed(v, sends, [&v] {
    v.left->Close();
    v.right->Close();
  });
  Outcome out;
  out.data.resize(static_cast<std::size_t>(world));
  out.start = Clock::now();
  out.status = testing::RunRanks(world, [&](int r) {
    const RingLinks mine = r == victim
                               ? doomed.Links()
                               : RingLinks{.left = links[static_cast<std::size_t>(r)].left,
                                           .right = links[static_cast<std::size_t>(r)].right,
                                           .owned = {}};
    return ReduceAsRank(r, world, mine, kOp, options, &out.data[static_cast<std::size_t>(r)], size);
  });
  return out;
}

// With 100,000 floats over 4 ranks in segments of 1000, each rank sends 25 messages per step, six
// steps. Rank 1, three hops downstream of rank 2, needs rank 2's messages up to step 3 (its
// 100th): a death before that leaves every other rank short.
BOOST_AUTO_TEST_CASE(every_rank_names_a_rank_that_dies_mid_op) {
  for (Transport transport : testing::kTransports) {
    for (const RingOptions& options : kDrivings) {
      for (int sends : {0, 1, 20, 60, 99}) {  // before its first message, in each step up to 3
        BOOST_TEST_CONTEXT(transport << ", " << Driving(options) << ", dies after " << sends
                                     << " messages") {
          const Outcome out = RunWithVictim(transport, 4, 2, sends, options);
          BOOST_TEST(!out.status[2].ok());
          CheckEveryOtherRankNames(out.status, 2, out.start);
        }
      }
    }
  }
}

// After a late death: within 30 s each rank but the victim ends, with the sum or naming it.
void CheckEachRankHasTheSumOrNames(const Outcome& out, int victim, const testing::Reference& ref) {
  BOOST_TEST(testing::SecondsSince(out.start) < 30.0);
  for (std::size_t i = 0; i < out.status.size(); ++i) {
    if (static_cast<int>(i) == victim) continue;
    BOOST_TEST_CONTEXT("rank " << i) {
      if (out.status[i].ok()) {
        BOOST_TEST(testing::CountOutside(out.data[i], ref) == 0u);
      } else {
        BOOST_TEST(Mentions(out.status[i].message(), "rank " + std::to_string(victim)));
      }
    }
  }
}

// A small range: 1000 floats, gathered in segments of 100. The victim sends its own range to its
// right (10 messages), then to its left (10, with more than three ranks), then passes ranges on.
// Dying within its first 10 messages leaves both neighbours short of its range, and every other
// rank short of it too; later, the ranks that got all they need may hold the sum.
constexpr std::size_t kSmall = 1000;
const RingOptions kSmallOptions{.timeout = 60s, .segment_floats = 100};
const RingOptions kSmallThreaded{.timeout = 60s, .segment_floats = 100, .caller_sends = false};

BOOST_AUTO_TEST_CASE(every_rank_names_a_rank_that_dies_mid_gather) {
  for (Transport transport : testing::kTransports) {
    for (const RingOptions& options : {kSmallOptions, kSmallThreaded}) {
      for (int world = 3; world <= 6; ++world) {
        for (int sends : {0, 1, 5}) {
          const int victim = world / 2;
          BOOST_TEST_CONTEXT(transport << ", " << Driving(options) << ", world " << world
                                       << ", dies after " << sends << " messages") {
            BOOST_TEST_REQUIRE(RingAllReduce::GathersToSum(world, kSmall * sizeof(float), options));
            const Outcome out = RunWithVictim(transport, world, victim, sends, options, kSmall);
            BOOST_TEST(!out.status[static_cast<std::size_t>(victim)].ok());
            CheckEveryOtherRankNames(out.status, victim, out.start);
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(after_a_late_death_in_a_gather_each_rank_has_the_sum_or_names_it) {
  for (Transport transport : testing::kTransports) {
    for (const RingOptions& options : {kSmallOptions, kSmallThreaded}) {
      for (int world = 3; world <= 6; ++world) {
        const testing::Reference ref = testing::ReferenceSum(world, kSmall, kOp);
        for (int sends : {10, 15, 25}) {
          const int victim = world / 2;
          BOOST_TEST_CONTEXT(transport << ", " << Driving(options) << ", world " << world
                                       << ", dies after " << sends << " messages") {
            const Outcome out = RunWithVictim(transport, world, victim, sends, options, kSmall);
            CheckEachRankHasTheSumOrNames(out, victim, ref);
          }
        }
      }
    }
  }
}

// A middle range at 3 and 4 ranks: 13000 floats, in segments of 1000, go both ways by chunks
// (ring_scatter_sum_test.cc). The victim first sends its values of the other ranks' chunks (10
// messages at 3 ranks, 16 at 4), then its chunk's sum both ways. Dying before that sum leaves
// every rank without it; later, the ranks that got all they need may hold the sum.
constexpr std::size_t kMiddle = 13'000;
const RingOptions kMiddleOptions{.timeout = 60s, .segment_floats = 1000};
const RingOptions kMiddleThreaded{.timeout = 60s, .segment_floats = 1000, .caller_sends = false};

BOOST_AUTO_TEST_CASE(every_rank_names_a_rank_that_dies_in_a_middle_op_or_has_the_sum) {
  for (Transport transport : testing::kTransports) {
    for (const RingOptions& options : {kMiddleOptions, kMiddleThreaded}) {
      for (int world = 3; world <= 4; ++world) {
        const testing::Reference ref = testing::ReferenceSum(world, kMiddle, kOp);
        const int before_sums = world == 3 ? 10 : 16;
        for (int sends : {0, 1, 6, before_sums, before_sums + 3}) {
          const int victim = world / 2;
          BOOST_TEST_CONTEXT(transport << ", " << Driving(options) << ", world " << world
                                       << ", dies after " << sends << " messages") {
            BOOST_TEST_REQUIRE(
                RingAllReduce::ScattersToSum(world, kMiddle * sizeof(float), options));
            const Outcome out = RunWithVictim(transport, world, victim, sends, options, kMiddle);
            BOOST_TEST(!out.status[static_cast<std::size_t>(victim)].ok());
            if (sends <= before_sums) {
              CheckEveryOtherRankNames(out.status, victim, out.start);
              continue;
            }
            CheckEachRankHasTheSumOrNames(out, victim, ref);
          }
        }
      }
    }
  }
}

// With two ranks each sends its 100 messages of 1000 floats and needs all 100 of the other's.
BOOST_AUTO_TEST_CASE(the_peer_of_a_two_rank_exchange_names_it_when_it_dies_mid_op) {
  for (Transport transport : testing::kTransports) {
    for (const RingOptions& options : kDrivings) {
      for (int sends : {0, 1, 50, 99}) {
        BOOST_TEST_CONTEXT(transport << ", " << Driving(options) << ", dies after " << sends
                                     << " messages") {
          const Outcome out = RunWithVictim(transport, 2, 1, sends, options);
          BOOST_TEST(!out.status[1].ok());
          CheckEveryOtherRankNames(out.status, 1, out.start);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(after_a_late_death_each_rank_has_the_sum_or_an_error_naming_it) {
  // Past its 100th message the ranks downstream may already hold all they need.
  const testing::Reference ref = testing::ReferenceSum(4, kSize, kOp);
  for (Transport transport : testing::kTransports) {
    for (const RingOptions& options : kDrivings) {
      for (int sends : {100, 125, 149}) {
        BOOST_TEST_CONTEXT(transport << ", " << Driving(options) << ", dies after " << sends
                                     << " messages") {
          const Outcome out = RunWithVictim(transport, 4, 2, sends, options);
          BOOST_TEST(testing::SecondsSince(out.start) < 30.0);
          for (std::size_t r : {0u, 1u, 3u}) {
            BOOST_TEST_CONTEXT("rank " << r) {
              if (out.status[r].ok()) {
                BOOST_TEST(testing::CountOutside(out.data[r], ref) == 0u);
              } else {
                BOOST_TEST(Mentions(out.status[r].message(), "rank 2"));
              }
            }
          }
          BOOST_TEST(!out.status[3].ok());  // the victim's right neighbour never gets step 5
        }
      }
    }
  }
}

void CheckProcessExitsMidOp(int world, int victim, const RingOptions& options) {
  Result<LoopbackRing> listening = LoopbackRing::Listen(world);
  BOOST_TEST_REQUIRE(listening.ok(), listening.status().message());
  // Fork before this process starts any thread.
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    Result<RingLinks> links = listening.value().Join(victim, 10s);
    if (!links.ok()) ::_exit(1);
    Doomed doomed(links.value(), 30, [] { ::_exit(3); });
    (void)ReduceAsRank(victim, world, doomed.Links(), kOp, options);  // never returns: it dies
    ::_exit(2);  // it should have died before the op ended
  }
  const Clock::time_point start = Clock::now();
  const std::vector<Status> status = testing::RunRanks(world, [&](int r) {
    if (r == victim) return Status::Ok();
    Result<RingLinks> links = listening.value().Join(r, 10s);
    if (!links.ok()) return links.status();
    return ReduceAsRank(r, world, links.value(), kOp, options);
  });
  int exit_status = 0;
  ::waitpid(child, &exit_status, 0);
  BOOST_TEST((WIFEXITED(exit_status) && WEXITSTATUS(exit_status) == 3));
  CheckEveryOtherRankNames(status, victim, start);
}

BOOST_AUTO_TEST_CASE(every_rank_names_a_rank_process_that_exits_mid_op) {
  for (const RingOptions& options : kDrivings) {
    for (const auto& [world, victim] : {std::pair{4, 1}, std::pair{2, 1}}) {
      BOOST_TEST_CONTEXT(Driving(options) << ", world " << world) {
        CheckProcessExitsMidOp(world, victim, options);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_silent_rank_fails_the_others_within_the_timeout) {
  for (Transport transport : testing::kTransports) {
    for (bool caller_sends : {true, false}) {
      for (const auto& [world, silent] : {std::pair{3, 2}, std::pair{2, 1}}) {
        BOOST_TEST_CONTEXT(transport << (caller_sends ? "" : ", threaded") << ", world " << world) {
          std::vector<RingLinks> links = testing::MakeRing(transport, world);
          const Clock::time_point start = Clock::now();
          const std::vector<Status> status = testing::RunRanks(world, [&](int r) {
            if (r == silent) return Status::Ok();  // keeps its links open, never sends
            return ReduceAsRank(
                r, world, links[static_cast<std::size_t>(r)], kOp,
                {.timeout = 300ms, .segment_floats = 1000, .caller_sends = caller_sends});
          });
          BOOST_TEST(testing::SecondsSince(start) < 30.0);
          for (int r = 0; r < silent; ++r) BOOST_TEST(!status[static_cast<std::size_t>(r)].ok());
          // Rank 0 waits for the silent rank's messages itself.
          const std::string name = "rank " + std::to_string(silent);
          BOOST_TEST(Mentions(status[0].message(), "timeout"));
          BOOST_TEST(Mentions(status[0].message(), name));
          BOOST_TEST(Mentions(status[0].message(), "op 7"));
        }
      }
    }
  }
}

// "tag mismatch", naming `got` and `want` (as message tags, or as the op a notice gave up).
boost::test_tools::predicate_result NamesTags(const std::string& text, int got, int want) {
  const auto either = [&](int tag) {
    return text.find("tagged " + std::to_string(tag)) != std::string::npos ||
           text.find("op " + std::to_string(tag)) != std::string::npos;
  };
  if (text.find("tag mismatch") != std::string::npos && either(got) && either(want)) return true;
  boost::test_tools::predicate_result r(false);
  r.message() << "\"" << text << "\" is not a tag mismatch naming " << got << " and " << want;
  return r;
}

BOOST_AUTO_TEST_CASE(a_rank_on_another_op_is_a_tag_mismatch_naming_both_tags) {
  for (Transport transport : testing::kTransports) {
    for (const RingOptions& options : kDrivings) {
      BOOST_TEST_CONTEXT(transport << ", " << Driving(options)) {
        const int world = 3, stray = 1;
        testing::Ring ring(testing::MakeRing(transport, world), options);
        const Clock::time_point start = Clock::now();
        const std::vector<Status> status = testing::RunRanks(world, [&](int r) {
          const std::uint32_t op = r == stray ? kOp + 1 : kOp;
          std::vector<float> data = testing::Input(r, kSize, op);
          return ring.ranks[static_cast<std::size_t>(r)]->AllReduceSum(data, op);
        });
        BOOST_TEST(testing::SecondsSince(start) < 30.0);
        for (const Status& s : status) BOOST_TEST_REQUIRE(!s.ok());
        BOOST_TEST(NamesTags(status[2].message(), 8, 7));  // receives the stray rank's messages
        BOOST_TEST(NamesTags(status[1].message(), 7, 8));  // the stray rank itself
        BOOST_TEST(Mentions(status[2].message(), "rank 1"));

        // A ring that failed refuses to run again, since its links may be mid-message.
        std::vector<float> data(10);
        const Status again = ring.ranks[0]->AllReduceSum(data, kOp + 2);
        BOOST_TEST(Mentions(again.message(), "refused"));
        BOOST_TEST(Mentions(again.message(), "op 7 failed"));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_two_rank_peer_on_another_op_is_a_tag_mismatch_naming_both_tags) {
  for (Transport transport : testing::kTransports) {
    for (const RingOptions& options : kDrivings) {
      BOOST_TEST_CONTEXT(transport << ", " << Driving(options)) {
        testing::Ring ring(testing::MakeRing(transport, 2), options);
        const Clock::time_point start = Clock::now();
        const std::vector<Status> status = testing::RunRanks(2, [&](int r) {
          const std::uint32_t op = r == 1 ? kOp + 1 : kOp;
          std::vector<float> data = testing::Input(r, kSize, op);
          return ring.ranks[static_cast<std::size_t>(r)]->AllReduceSum(data, op);
        });
        BOOST_TEST(testing::SecondsSince(start) < 30.0);
        for (const Status& s : status) BOOST_TEST_REQUIRE(!s.ok());
        BOOST_TEST(NamesTags(status[0].message(), 8, 7));
        BOOST_TEST(Mentions(status[0].message(), "rank 1"));
        BOOST_TEST(NamesTags(status[1].message(), 7, 8));
        BOOST_TEST(Mentions(status[1].message(), "rank 0"));
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace ring_failure_test
}  // namespace dtrain::dist
