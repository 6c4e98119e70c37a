// A worker's channel in an elastic job (control_protocol.md, "regroup"): Upstream reads past a
// regroup_now notice to the reply it waits for and remembers the notice; TakeRegroupNotice finds
// one that waits on the channel without blocking, and says so once; RegroupOverChannel sends the
// regroup request with its fields, parses the answer (members, leader, peers) and drops a notice
// that came before it; an error answer is the exchange's error.
#include <sys/socket.h>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "daemon/worker/regroup_exchange.h"
#include "daemon/worker/upstream.h"

namespace dtrain::worker {
namespace regroup_channel_test {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr std::int64_t kJob = 7;

// A worker's Upstream and the coordinator's end of its channel.
struct Channel {
  Channel() : upstream(Make(), kJob) {}
  net::FrameStream Make() {
    int fds[2];
    BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
    coordinator = std::make_unique<net::FrameStream>(fds[1]);
    return net::FrameStream(fds[0]);
  }
  void Tell(const json& message) {
    BOOST_REQUIRE(
        coordinator->WriteString(net::MessageType::kControl, kJob, 0, message.dump(), 5s).ok());
  }
  json Heard() {
    Result<net::Frame> frame = coordinator->Read(5s);
    BOOST_REQUIRE(frame.ok());
    return json::parse(frame.value().payload);
  }

  std::unique_ptr<net::FrameStream> coordinator;
  Upstream upstream;
};

const json kNotice = {{"type", "regroup_now"}, {"membership", 1}};

BOOST_AUTO_TEST_SUITE(regroup_channel)

BOOST_AUTO_TEST_CASE(read_skips_a_notice_and_remembers_it_once) {
  Channel c;
  BOOST_TEST(!c.upstream.TakeRegroupNotice());  // nothing waits: no block, no notice
  c.Tell(kNotice);
  c.Tell({{"ok", true}});
  Result<net::Frame> reply = c.upstream.Read(5s);
  BOOST_TEST_REQUIRE(reply.ok());
  BOOST_TEST(json::parse(reply.value().payload) == (json{{"ok", true}}));
  BOOST_TEST(c.upstream.TakeRegroupNotice());
  BOOST_TEST(!c.upstream.TakeRegroupNotice());
}

BOOST_AUTO_TEST_CASE(a_waiting_notice_is_found_between_steps) {
  Channel c;
  c.Tell(kNotice);
  // It may take a moment to arrive; the poll itself never blocks.
  bool found = false;
  for (int tries = 0; tries < 500 && !found; ++tries) {
    found = c.upstream.TakeRegroupNotice();
    if (!found) std::this_thread::sleep_for(2ms);
  }
  BOOST_TEST(found);
  BOOST_TEST(!c.upstream.TakeRegroupNotice());
}

BOOST_AUTO_TEST_CASE(the_regroup_exchange_sends_its_fields_and_parses_the_answer) {
  Channel c;
  std::jthread coordinator([&] {
    const json asked = c.Heard();
    BOOST_TEST(asked["type"] == "regroup");
    BOOST_TEST(asked["membership"] == 2);
    BOOST_TEST(asked["completed_step"] == 57);
    c.Tell(kNotice);  // meant for the round being answered
    c.Tell({{"ok", true},
            {"membership", 3},
            {"members", {0, 2}},
            {"leader", 2},
            {"peers",
             {{{"host", "127.0.0.1"}, {"port", 4000u}},
              {{"host", "127.0.0.1"}, {"port", 4001u}},
              {{"host", "127.0.0.2"}, {"port", 4002u}}}}});
  });
  const Result<runner::Membership> answer =
      RegroupOverChannel(c.upstream, 5s)({.membership = 2, .completed_step = 57});
  coordinator.join();
  BOOST_TEST_REQUIRE(answer.ok(), answer.status().message());
  BOOST_TEST(answer.value().epoch == 3);
  BOOST_TEST((answer.value().members == std::vector<int>{0, 2}));
  BOOST_TEST(answer.value().leader == 2);
  BOOST_TEST_REQUIRE(answer.value().peers.size() == 3u);
  BOOST_TEST(answer.value().peers[2].host == "127.0.0.2");
  BOOST_TEST(answer.value().peers[2].port == 4002);
  BOOST_TEST(!c.upstream.TakeRegroupNotice());  // dropped with the answer
}

BOOST_AUTO_TEST_CASE(a_refused_regroup_is_an_error) {
  Channel c;
  std::jthread coordinator([&] {
    (void)c.Heard();
    c.Tell({{"ok", false}, {"error", "fewer than min_workers asked"}});
  });
  const Result<runner::Membership> answer = RegroupOverChannel(c.upstream, 5s)({});
  coordinator.join();
  BOOST_TEST(!answer.ok());
  BOOST_TEST(answer.status().message() == "fewer than min_workers asked");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace regroup_channel_test
}  // namespace dtrain::worker
