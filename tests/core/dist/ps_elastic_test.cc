// An elastic job's parameter-server shard (ShardOptions::elastic; ps_protocol.md, "Elastic
// jobs"): its workers come in memberships whose hellos name them. A member's link that closes
// mid-step makes the shard answer the others with a regroup reply, keeping the state after the
// last step it applied; a newer membership's hellos (the survivors, a joiner) go on from that state
// with their own count of members, each step the rows-weighted sum of the members' gradients; a
// hello of an older epoch is refused; a malformed or contradictory hello closes that link only, as
// does one at another step than its membership's, at which every member is answered even after
// the others stepped; a membership that never completes fails the shard at the timeout. Waits on
// joins and replies, never on timing, for what the checks depend on.
#include <algorithm>
#include <array>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/dist/local_link.h"
#include "core/dist/parameter_shard.h"
#include "core/dist/ps_client.h"
#include "core/dist/ps_messages.h"
#include "core/dist/shard_ranges.h"
#include "core/math/elementwise.h"
#include "core/optim/optimizer.h"
#include "replica_harness.h"

namespace dtrain::dist {
namespace ps_elastic_test {

BOOST_AUTO_TEST_SUITE(ps_elastic)

using namespace std::chrono_literals;

constexpr std::size_t kParams = 29;
constexpr int kWorkers = 3;  // the job's
constexpr float kLr = 0.25f;
constexpr std::uint32_t kTotalRows = 12;

bool Mentions(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

std::vector<float> Initial() {
  std::vector<float> p(kParams);
  for (std::size_t i = 0; i < kParams; ++i) p[i] = 0.25f + 0.02f * static_cast<float>(i);
  return p;
}

// The gradient the member at `position` pushes for `step`, and its rows: they differ by position.
std::vector<float> Gradient(int position, std::uint64_t step) {
  std::vector<float> g(kParams);
  for (std::size_t i = 0; i < kParams; ++i) {
    g[i] = 0.05f * static_cast<float>(position + 1) - 0.01f * static_cast<float>(step) +
           0.002f * static_cast<float>(i);
  }
  return g;
}
std::uint32_t Rows(int position) { return 3 + static_cast<std::uint32_t>(position); }

// One optimizer step from `params` with `members` members' gradients of `step`, rows-weighted,
// summed by position: what the shard applies.
void ReferenceStep(std::vector<float>& params, optim::Optimizer& sgd, int members,
                   std::uint64_t step) {
  std::uint32_t total = 0;
  for (int p = 0; p < members; ++p) total += Rows(p);
  std::vector<float> sum(kParams);
  for (int p = 0; p < members; ++p) {
    const auto weight = static_cast<float>(static_cast<double>(Rows(p)) / total);
    if (p == 0) {
      math::ScaleInto(weight, Gradient(p, step), sum);
    } else {
      math::Axpy(weight, Gradient(p, step), sum);
    }
  }
  sgd.Step(params, sum, kLr);
}

// Shard `shard` of `shards`.
ShardOptions Options(std::chrono::milliseconds timeout, int backup_workers = 0, int shard = 0,
                     int shards = 1) {
  const ShardRange range = ShardRanges(kParams, shards)[static_cast<std::size_t>(shard)];
  return {.shard = shard,
          .shards = shards,
          .begin = range.begin,
          .end = range.end,
          .num_params = kParams,
          .workers = kWorkers,
          .mode = PsMode::kSync,
          .optimizer = {},
          .timeout = timeout,
          .backup_workers = backup_workers,
          .elastic = true};
}

// A worker of membership `epoch` of `members`, at `position`, over a local link the shard
// admitted, or over `links` (one per shard, in shard order, whose other ends the shards admitted)
// with the membership's backup workers `backups`.
class Member {
 public:
  Member(ParameterShard& shard, std::uint32_t epoch, int members, int position)
      : Member(MakeLocalLinkPair("worker " + std::to_string(position), "shard 0"), {}, epoch,
               members, position, 0) {
    admitted = shard.Admit(pair_.b.get());
  }
  Member(std::vector<Link*> links, std::uint32_t epoch, int members, int position, int backups)
      : Member({}, std::move(links), epoch, members, position, backups) {}

  int position() const { return position_; }
  // `step`: the steps this member completed.
  Status Hello(std::uint64_t step) { return client_.Hello(params, {}, step); }
  Status Step(std::uint64_t step) {
    Result<std::uint32_t> vote = client_.SyncStep(step, Gradient(position_, step), kLr,
                                                  Rows(position_), kTotalRows, kNoVote, params);
    return vote.ok() ? Status::Ok() : vote.status();
  }
  // Pushes from `step` on until the shard applied `end` steps; with backup workers a push that
  // came after its step is answered with the newest state, and the member goes on from there.
  Status StepUntil(std::uint64_t step, std::uint64_t end) {
    while (step < end) {
      if (Status s = Step(step); !s.ok()) return s;
      step = client_.clock_reached() + 1;
    }
    return Status::Ok();
  }
  // Sends its push of `step` to shard `shard` alone, as a worker does before its pushes to the
  // next shards (it may die before those).
  Status PushTo(int shard, std::uint64_t step) {
    const ShardRange r =
        ShardRanges(kParams, static_cast<int>(links_.size()))[static_cast<std::size_t>(shard)];
    std::array<float, kPsHeaderFloats> header;
    EncodePsHeader({.from = static_cast<std::uint32_t>(position_),
                    .vote = kNoVote,
                    .lr = kLr,
                    .clock = step,
                    .rows = Rows(position_),
                    .total_rows = kTotalRows},
                   header);
    Link& link = *links_[static_cast<std::size_t>(shard)];
    const Deadline deadline = Clock::now() + 20s;
    if (Status s = link.Send(PsRequestTag(PsMessage::kPush), header, deadline); !s.ok()) return s;
    const std::vector<float> grad = Gradient(position_, step);
    return link.Send(PsDataTag(PsRequestTag(PsMessage::kPush)),
                     std::span(grad).subspan(r.begin, r.size()), deadline);
  }
  Status Goodbye(std::uint64_t steps) { return client_.Goodbye(steps); }
  // The worker is gone (it died, or left to regroup).
  void Leave() {
    for (Link* link : links_) link->Close();
  }

  Status admitted;

 private:
  Member(LocalLinkPair pair, std::vector<Link*> links, std::uint32_t epoch, int members,
         int position, int backups)
      : pair_(std::move(pair)),
        links_(links.empty() ? std::vector<Link*>{pair_.a.get()} : std::move(links)),
        client_(links_, {.rank = position,
                         .workers = kWorkers,
                         .num_params = kParams,
                         .mode = PsMode::kSync,
                         .timeout = 20s,
                         .backup_workers = backups,
                         .membership = epoch,
                         .members = members}),
        position_(position),
        params(kParams) {}

  LocalLinkPair pair_;  // empty over given links
  std::vector<Link*> links_;
  PsClient client_;
  int position_;

 public:
  std::vector<float> params;
};

// Runs `each(member)` on every member at once; returns their statuses in order.
template <typename F>
std::vector<Status> AllAtOnce(std::vector<std::unique_ptr<Member>>& members, F each) {
  std::vector<Status> out(members.size());
  {
    std::vector<std::jthread> threads;
    for (std::size_t p = 0; p < members.size(); ++p) {
      threads.emplace_back([&, p] { out[p] = each(*members[p]); });
    }
  }
  return out;
}

std::vector<std::unique_ptr<Member>> Membership(ParameterShard& shard, std::uint32_t epoch,
                                                int members) {
  std::vector<std::unique_ptr<Member>> out;
  for (int p = 0; p < members; ++p)
    out.push_back(std::make_unique<Member>(shard, epoch, members, p));
  for (const auto& m : out) BOOST_TEST_REQUIRE(m->admitted.ok(), m->admitted.message());
  return out;
}

BOOST_AUTO_TEST_CASE(a_lost_member_regroups_the_others_and_new_memberships_go_on_from_its_state) {
  ParameterShard shard(Options(20'000ms));
  BOOST_TEST_REQUIRE(shard.Load(Initial()).ok());
  Status served;
  std::jthread server([&] { served = shard.Serve({}); });
  std::unique_ptr<optim::Optimizer> sgd = optim::MakeOptimizer({}, 0, kParams);
  std::vector<float> expected = Initial();

  // Membership 0, all three: steps 0 and 1.
  auto first = Membership(shard, 0, 3);
  for (const Status& s : AllAtOnce(first, [](Member& m) { return m.Hello(0); })) {
    BOOST_TEST_REQUIRE(s.ok(), s.message());
  }
  for (std::uint64_t step = 0; step < 2; ++step) {
    for (const Status& s : AllAtOnce(first, [&](Member& m) { return m.Step(step); })) {
      BOOST_TEST_REQUIRE(s.ok(), s.message());
    }
    ReferenceStep(expected, *sgd, 3, step);
  }
  BOOST_TEST((first[0]->params == expected));
  // Step 2: the member at position 2 dies instead of pushing; the others are told to regroup.
  std::vector<Status> step2(2);
  {
    std::jthread a([&] { step2[0] = first[0]->Step(2); });
    std::jthread b([&] { step2[1] = first[1]->Step(2); });
    first[2]->Leave();
  }
  for (const Status& s : step2) {
    BOOST_TEST(!s.ok());
    BOOST_TEST(Mentions(s, "membership 0 lost a member: its members regroup"), s.message());
  }
  for (auto& m : first) m->Leave();  // the survivors close their sessions to regroup

  // Membership 1, the two survivors: they start from the state after step 1, and go on at step 2
  // with two members.
  auto second = Membership(shard, 1, 2);
  for (const Status& s : AllAtOnce(second, [](Member& m) { return m.Hello(2); })) {
    BOOST_TEST_REQUIRE(s.ok(), s.message());
  }
  BOOST_TEST((second[0]->params == expected));
  BOOST_TEST((second[1]->params == expected));
  for (std::uint64_t step = 2; step < 4; ++step) {
    for (const Status& s : AllAtOnce(second, [&](Member& m) { return m.Step(step); })) {
      BOOST_TEST_REQUIRE(s.ok(), s.message());
    }
    ReferenceStep(expected, *sgd, 2, step);
  }
  BOOST_TEST((second[1]->params == expected));

  // A hello of the older membership is refused, naming both epochs.
  Member stale(shard, 0, 3, 1);
  BOOST_TEST_REQUIRE(stale.admitted.ok());
  const Status refused = stale.Hello(4);
  BOOST_TEST(!refused.ok());
  BOOST_TEST(Mentions(refused, "membership epoch: the worker has 0, the shard 1"),
             refused.message());

  // The members leave at a step boundary (to let a joiner in): membership 2 of three goes on.
  for (auto& m : second) m->Leave();
  auto third = Membership(shard, 2, 3);
  for (const Status& s : AllAtOnce(third, [](Member& m) { return m.Hello(4); })) {
    BOOST_TEST_REQUIRE(s.ok(), s.message());
  }
  BOOST_TEST((third[2]->params == expected));
  for (const Status& s : AllAtOnce(third, [](Member& m) { return m.Step(4); })) {
    BOOST_TEST_REQUIRE(s.ok(), s.message());
  }
  ReferenceStep(expected, *sgd, 3, 4);
  for (const Status& s : AllAtOnce(third, [](Member& m) { return m.Goodbye(5); })) {
    BOOST_TEST(s.ok(), s.message());
  }
  server.join();
  BOOST_TEST_REQUIRE(served.ok(), served.message());
  for (const auto& m : third) BOOST_TEST((m->params == expected));
  const std::vector<float> kept(shard.params().begin(), shard.params().end());
  BOOST_TEST((kept == expected));
  BOOST_TEST(shard.Stats().steps == 5u);
  BOOST_TEST(shard.Stats().pushes_applied == 3u + 3u + 2u + 2u + 3u);
}

BOOST_AUTO_TEST_CASE(a_membership_that_never_completes_fails_the_shard_at_the_timeout) {
  ParameterShard shard(Options(300ms));
  BOOST_TEST_REQUIRE(shard.Load(Initial()).ok());
  Status served;
  std::jthread server([&] { served = shard.Serve({}); });
  // The first membership may be smaller than the job's workers: here 2 of 3, and one never comes.
  Member alone(shard, 0, 2, 0);
  BOOST_TEST_REQUIRE(alone.admitted.ok());
  const Status hello = alone.Hello(0);
  server.join();
  BOOST_TEST(!served.ok());
  BOOST_TEST(Mentions(served, "membership 0 of 2: 1 of its members said hello within 300 ms"),
             served.message());
  BOOST_TEST(!hello.ok());
  BOOST_TEST(!shard.Admit(nullptr).ok());
}

// Over real sockets: `shards` elastic shards (each with `backup_workers`) serving `count` worker
// links each, all admitted, that keep the lines they log.
class TcpShard {
 public:
  explicit TcpShard(int count, int backup_workers = 0, int shards = 1)
      : backup_workers_(backup_workers) {
    std::string error;
    links_ = testing::MakeTcpPsLinks(count, shards, &error);
    BOOST_TEST_REQUIRE(!links_.owned.empty(), error);
    const std::vector<float> initial = Initial();
    served_.resize(static_cast<std::size_t>(shards));
    for (int k = 0; k < shards; ++k) {
      auto& shard = shards_.emplace_back(
          std::make_unique<ParameterShard>(Logging(Options(20'000ms, backup_workers, k, shards))));
      const ShardRange r = ShardRanges(kParams, shards)[static_cast<std::size_t>(k)];
      BOOST_TEST_REQUIRE(shard->Load(std::span(initial).subspan(r.begin, r.size())).ok());
      for (Link* link : links_.shard[static_cast<std::size_t>(k)]) {
        BOOST_TEST_REQUIRE(shard->Admit(link).ok());
      }
    }
    for (std::size_t k = 0; k < shards_.size(); ++k) {
      servers_.emplace_back([this, k] { served_[k] = shards_[k]->Serve({}); });
    }
  }

  // A worker over link `link`, of a job of `workers`, at `position` of membership `epoch` of
  // `members`.
  std::unique_ptr<PsClient> Client(int link, int workers, std::uint32_t epoch, int members,
                                   int position) {
    return std::make_unique<PsClient>(links_.worker[static_cast<std::size_t>(link)],
                                      PsClientOptions{.rank = position,
                                                      .workers = workers,
                                                      .num_params = kParams,
                                                      .mode = PsMode::kSync,
                                                      .timeout = 20s,
                                                      .membership = epoch,
                                                      .members = members});
  }
  // The member over link `link` (to every shard) at `position` of membership `epoch` of
  // `members`.
  std::unique_ptr<Member> Join(int link, std::uint32_t epoch, int members, int position) {
    return std::make_unique<Member>(links_.worker[static_cast<std::size_t>(link)], epoch, members,
                                    position, std::min(backup_workers_, members - 1));
  }
  // Once the workers said goodbye: what Serve returned (the first shard's failure).
  Status Served() {
    servers_.clear();  // joins them
    for (const Status& s : served_) {
      if (!s.ok()) return s;
    }
    return Status::Ok();
  }
  const ParameterShard& shard(int k = 0) const { return *shards_[static_cast<std::size_t>(k)]; }
  // Every shard's range, in order: the whole parameter vector.
  std::vector<float> Params() const {
    std::vector<float> out;
    for (const auto& s : shards_) out.insert(out.end(), s->params().begin(), s->params().end());
    return out;
  }
  // How many links the shards closed.
  std::size_t Closed() { return Logged("closed a worker link: "); }
  // Whether a shard closed a link saying `what`.
  bool Said(const std::string& what) {
    std::lock_guard lock(mu_);
    return std::ranges::any_of(logged_, [&](const std::string& l) {
      return l.find("closed a worker link: ") != std::string::npos &&
             l.find(what) != std::string::npos;
    });
  }
  // How many lines the shards logged that hold `what`.
  std::size_t Logged(const std::string& what) {
    std::lock_guard lock(mu_);
    return static_cast<std::size_t>(std::ranges::count_if(
        logged_, [&](const std::string& l) { return l.find(what) != std::string::npos; }));
  }

 private:
  ShardOptions Logging(ShardOptions options) {
    options.log = [this](const std::string& line) {
      std::lock_guard lock(mu_);
      logged_.push_back(line);
    };
    return options;
  }

  const int backup_workers_;
  std::mutex mu_;
  std::vector<std::string> logged_;
  testing::PsLinks links_;
  std::vector<std::unique_ptr<ParameterShard>> shards_;
  std::vector<Status> served_;
  std::vector<std::jthread> servers_;
};

// Over real sockets: a worker that says no membership, one that disagrees on the job's workers
// and one that takes a position already taken (while its membership forms, or once it is whole)
// each have their link closed (the shard says why); the shard keeps serving the others, whose
// membership trains.
BOOST_AUTO_TEST_CASE(a_bad_hello_closes_that_link_only) {
  TcpShard tcp(5);
  const auto client = [&](int link, int workers, std::uint32_t epoch, int members, int position) {
    return tcp.Client(link, workers, epoch, members, position);
  };
  std::vector<float> params(kParams);
  const Status no_membership = client(0, kWorkers, 0, 0, 0)->Hello(params);
  BOOST_TEST(!no_membership.ok());
  const Status other_workers = client(1, kWorkers + 4, 0, 2, 1)->Hello(params);
  BOOST_TEST(Mentions(other_workers, "disagree on the workers: the worker has 7, the shard 3"),
             other_workers.message());
  // Two say hello at position 0 of membership 0 of 2: one takes it, the other's link is closed;
  // position 1 completes the membership.
  std::vector<std::unique_ptr<PsClient>> members;
  members.push_back(client(2, kWorkers, 0, 2, 0));
  members.push_back(client(3, kWorkers, 0, 2, 0));
  members.push_back(client(4, kWorkers, 0, 2, 1));
  std::vector<std::vector<float>> got(3, std::vector<float>(kParams));
  std::vector<Status> hellos(3);
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < 3; ++i) {
      threads.emplace_back([&, i] { hellos[i] = members[i]->Hello(got[i]); });
    }
  }
  BOOST_TEST_REQUIRE(hellos[2].ok(), hellos[2].message());
  BOOST_TEST_REQUIRE((hellos[0].ok() != hellos[1].ok()));
  PsClient& first = *members[hellos[0].ok() ? 0 : 1];
  PsClient& second = *members[2];
  std::vector<Status> steps(2);
  {
    std::jthread a([&] {
      steps[0] =
          first.SyncStep(0, Gradient(0, 0), kLr, Rows(0), kTotalRows, kNoVote, got[0]).status();
    });
    std::jthread b([&] {
      steps[1] =
          second.SyncStep(0, Gradient(1, 0), kLr, Rows(1), kTotalRows, kNoVote, got[2]).status();
    });
  }
  for (const Status& s : steps) BOOST_TEST_REQUIRE(s.ok(), s.message());
  BOOST_TEST(first.Goodbye(1).ok());
  BOOST_TEST(second.Goodbye(1).ok());
  const Status served = tcp.Served();
  BOOST_TEST_REQUIRE(served.ok(), served.message());
  std::vector<float> expected = Initial();
  std::unique_ptr<optim::Optimizer> sgd = optim::MakeOptimizer({}, 0, kParams);
  ReferenceStep(expected, *sgd, 2, 0);
  BOOST_TEST((got[2] == expected));
  BOOST_TEST(tcp.shard().Stats().steps == 1u);
  BOOST_TEST_REQUIRE(tcp.Closed() == 3u);
  BOOST_TEST(tcp.Said("said hello at position 0 of membership 0 of 0"));
  BOOST_TEST(tcp.Said("said hello with workers 7 where the shard has 3"));
  BOOST_TEST((tcp.Said("already has that position") || tcp.Said("is whole already")));
}

// Over real sockets: after membership 0 applied two steps and left, a member of membership 1 that
// says hello behind the shard (it completed 1 step) or ahead of it (3) is refused, naming both
// steps, and its link closed: its position stays free. The members at step 2 are served, from the
// state after step 1, and go on at step 2.
BOOST_AUTO_TEST_CASE(a_hello_at_another_step_is_refused_naming_both_steps) {
  TcpShard tcp(6);
  std::unique_ptr<optim::Optimizer> sgd = optim::MakeOptimizer({}, 0, kParams);
  std::vector<float> expected = Initial();
  // Membership 0 of 2 (links 0 and 1): steps 0 and 1, then both leave to regroup.
  std::vector<std::unique_ptr<Member>> first;
  for (int p = 0; p < 2; ++p) first.push_back(tcp.Join(p, 0, 2, p));
  for (const Status& s : AllAtOnce(first, [](Member& m) { return m.Hello(0); })) {
    BOOST_TEST_REQUIRE(s.ok(), s.message());
  }
  for (std::uint64_t step = 0; step < 2; ++step) {
    for (const Status& s : AllAtOnce(first, [&](Member& m) { return m.Step(step); })) {
      BOOST_TEST_REQUIRE(s.ok(), s.message());
    }
    ReferenceStep(expected, *sgd, 2, step);
  }
  for (auto& m : first) m->Leave();

  // Membership 1 of 2: a member behind (link 2) and one ahead (link 3) are refused.
  const Status behind = tcp.Join(2, 1, 2, 0)->Hello(1);
  BOOST_TEST(Mentions(behind, "disagree on the completed step: the worker has 1, the shard 2"),
             behind.message());
  const Status ahead = tcp.Join(3, 1, 2, 1)->Hello(3);
  BOOST_TEST(Mentions(ahead, "disagree on the completed step: the worker has 3, the shard 2"),
             ahead.message());
  // The members at step 2 (links 4 and 5) take both positions and go on.
  std::vector<std::unique_ptr<Member>> second;
  for (int p = 0; p < 2; ++p) second.push_back(tcp.Join(4 + p, 1, 2, p));
  for (const Status& s : AllAtOnce(second, [](Member& m) { return m.Hello(2); })) {
    BOOST_TEST_REQUIRE(s.ok(), s.message());
  }
  for (const auto& m : second) BOOST_TEST((m->params == expected));
  for (const Status& s : AllAtOnce(second, [](Member& m) { return m.Step(2); })) {
    BOOST_TEST_REQUIRE(s.ok(), s.message());
  }
  ReferenceStep(expected, *sgd, 2, 2);
  for (const Status& s : AllAtOnce(second, [](Member& m) { return m.Goodbye(3); })) {
    BOOST_TEST_REQUIRE(s.ok(), s.message());
  }
  const Status served = tcp.Served();
  BOOST_TEST_REQUIRE(served.ok(), served.message());
  for (const auto& m : second) BOOST_TEST((m->params == expected));
  BOOST_TEST(tcp.shard().Stats().steps == 3u);
  BOOST_TEST(tcp.Closed() == 2u);
  BOOST_TEST(tcp.Said("worker rank 0 said hello with completed step 1 where the shard has 2"));
  BOOST_TEST(tcp.Said("worker rank 1 said hello with completed step 3 where the shard has 2"));
}

// Over real sockets, with backup workers: a member whose hello the shard answers after the others
// of its membership took steps without it (its thread woke after theirs) is still served, at the
// membership's step: its hello names the step the membership formed at and receives the state
// after it, whatever the shard applied since; its first push is then answered as late, and it goes
// on from there. Which member is answered last, and how far the others got by then, is up to the
// schedulers: every round checks what holds in any order, and memberships of three whose members
// each step alone (b' = 2) make that late answer likely over the rounds.
BOOST_AUTO_TEST_CASE(a_member_answered_after_its_membership_stepped_is_served_at_its_step) {
  constexpr int kRounds = 8;
  constexpr std::uint64_t kSteps = 12;  // each round's
  TcpShard tcp(3 * kRounds, /*backup_workers=*/2);
  std::vector<float> start = Initial();
  for (int round = 0; round < kRounds; ++round) {
    const std::uint64_t from = static_cast<std::uint64_t>(round) * kSteps;
    std::vector<std::unique_ptr<Member>> members;
    for (int p = 0; p < 3; ++p) {
      members.push_back(tcp.Join(3 * round + p, static_cast<std::uint32_t>(round), 3, p));
    }
    std::vector<std::vector<float>> greeted(3);
    for (const Status& s : AllAtOnce(members, [&](Member& m) {
           Status hello = m.Hello(from);
           greeted[static_cast<std::size_t>(m.position())] = m.params;
           return hello.ok() ? m.StepUntil(from, from + kSteps) : hello;
         })) {
      BOOST_TEST_REQUIRE(s.ok(), s.message());
    }
    for (const auto& g : greeted) BOOST_TEST((g == start));
    // Each member stands after the round's last step, taken or answered as late.
    for (const auto& m : members) BOOST_TEST((m->params == members[0]->params));
    start = members[0]->params;
    if (round + 1 < kRounds) {
      for (auto& m : members) m->Leave();  // they regroup
      continue;
    }
    for (const Status& s :
         AllAtOnce(members, [&](Member& m) { return m.Goodbye(from + kSteps); })) {
      BOOST_TEST_REQUIRE(s.ok(), s.message());
    }
  }
  const Status served = tcp.Served();
  BOOST_TEST_REQUIRE(served.ok(), served.message());
  BOOST_TEST(
      (std::vector<float>(tcp.shard().params().begin(), tcp.shard().params().end()) == start));
  BOOST_TEST(tcp.shard().Stats().steps == kRounds * kSteps);
  BOOST_TEST(tcp.Closed() == 0u);
}

// Waits until `done()` holds (a shard's counts, read from another thread); no timing decides it.
template <typename Done>
void WaitUntil(Done done) {
  while (!done()) std::this_thread::sleep_for(1ms);
}

// Over real sockets, two shards: the member at position 2 pushes step 1 to shard 0, which applies
// it, and dies before its push to shard 1, which regroups at step 1. The survivors' membership
// says hello at step 1: shard 0 undoes its step 1, and both shards go on from the state after
// step 0, bit for bit as one process computes it.
BOOST_AUTO_TEST_CASE(on_two_shards_a_member_lost_between_its_pushes_is_undone_where_applied) {
  TcpShard tcp(5, /*backup_workers=*/0, /*shards=*/2);
  std::unique_ptr<optim::Optimizer> sgd = optim::MakeOptimizer({}, 0, kParams);
  std::vector<float> expected = Initial();
  std::vector<std::unique_ptr<Member>> first;
  for (int p = 0; p < 3; ++p) first.push_back(tcp.Join(p, 0, 3, p));
  for (const Status& s : AllAtOnce(first, [](Member& m) { return m.Hello(0); })) {
    BOOST_TEST_REQUIRE(s.ok(), s.message());
  }
  for (const Status& s : AllAtOnce(first, [](Member& m) { return m.Step(0); })) {
    BOOST_TEST_REQUIRE(s.ok(), s.message());
  }
  ReferenceStep(expected, *sgd, 3, 0);
  BOOST_TEST_REQUIRE(first[2]->PushTo(0, 1).ok());
  std::vector<Status> step1(2);
  {
    std::jthread a([&] { step1[0] = first[0]->Step(1); });
    std::jthread b([&] { step1[1] = first[1]->Step(1); });
    WaitUntil([&] { return tcp.shard(0).Stats().steps == 2; });
    first[2]->Leave();
  }
  for (const Status& s : step1) {
    BOOST_TEST(Mentions(s, "shard 1 of 2"), s.message());
    BOOST_TEST(Mentions(s, "membership 0 lost a member: its members regroup"), s.message());
  }
  BOOST_TEST(tcp.shard(1).Stats().steps == 1u);
  for (auto& m : first) m->Leave();

  std::vector<std::unique_ptr<Member>> second;
  for (int p = 0; p < 2; ++p) second.push_back(tcp.Join(3 + p, 1, 2, p));
  for (const Status& s : AllAtOnce(second, [](Member& m) { return m.Hello(1); })) {
    BOOST_TEST_REQUIRE(s.ok(), s.message());
  }
  for (const auto& m : second) BOOST_TEST((m->params == expected));
  for (std::uint64_t step = 1; step < 3; ++step) {
    for (const Status& s : AllAtOnce(second, [&](Member& m) { return m.Step(step); })) {
      BOOST_TEST_REQUIRE(s.ok(), s.message());
    }
    ReferenceStep(expected, *sgd, 2, step);
  }
  for (const Status& s : AllAtOnce(second, [](Member& m) { return m.Goodbye(3); })) {
    BOOST_TEST_REQUIRE(s.ok(), s.message());
  }
  const Status served = tcp.Served();
  BOOST_TEST_REQUIRE(served.ok(), served.message());
  for (const auto& m : second) BOOST_TEST((m->params == expected));
  BOOST_TEST((tcp.Params() == expected));
  for (int k = 0; k < 2; ++k) BOOST_TEST(tcp.shard(k).Stats().steps == 3u);
  BOOST_TEST(tcp.shard(0).Stats().steps_undone == 1u);
  BOOST_TEST(tcp.shard(1).Stats().steps_undone == 0u);
  // The shard that undid says so, naming the step the membership starts at.
  BOOST_TEST(tcp.Logged("undid its last step, back to step 1 ") == 1u);
  BOOST_TEST(tcp.Logged("shard 0 of 2 ") == 1u);
  BOOST_TEST(tcp.Closed() == 0u);
}

// Over real sockets, two shards: once a push of step 1 came (which proves step 0 applied on every
// shard), a newer membership's hello at step 0 no longer undoes step 0: it is refused naming both
// steps, as is one two steps behind. The membership goes on untouched.
BOOST_AUTO_TEST_CASE(on_two_shards_a_step_proven_applied_or_two_behind_is_not_undone) {
  TcpShard tcp(4, /*backup_workers=*/0, /*shards=*/2);
  std::unique_ptr<optim::Optimizer> sgd = optim::MakeOptimizer({}, 0, kParams);
  std::vector<float> expected = Initial();
  std::vector<std::unique_ptr<Member>> members;
  for (int p = 0; p < 2; ++p) members.push_back(tcp.Join(p, 0, 2, p));
  for (const Status& s : AllAtOnce(members, [](Member& m) { return m.Hello(0); })) {
    BOOST_TEST_REQUIRE(s.ok(), s.message());
  }
  for (const Status& s : AllAtOnce(members, [](Member& m) { return m.Step(0); })) {
    BOOST_TEST_REQUIRE(s.ok(), s.message());
  }
  ReferenceStep(expected, *sgd, 2, 0);
  Status step1;
  {
    std::jthread a([&] { step1 = members[0]->Step(1); });
    WaitUntil([&] {
      return tcp.shard(0).Stats().pushes_received == 3 && tcp.shard(1).Stats().pushes_received == 3;
    });
    const Status proven = tcp.Join(2, 1, 1, 0)->Hello(0);
    BOOST_TEST(Mentions(proven, "disagree on the completed step: the worker has 0, the shard 1"),
               proven.message());
    BOOST_TEST_REQUIRE(members[1]->Step(1).ok());
  }
  BOOST_TEST_REQUIRE(step1.ok(), step1.message());
  ReferenceStep(expected, *sgd, 2, 1);
  const Status behind = tcp.Join(3, 1, 1, 0)->Hello(0);
  BOOST_TEST(Mentions(behind, "disagree on the completed step: the worker has 0, the shard 2"),
             behind.message());
  for (const Status& s : AllAtOnce(members, [](Member& m) { return m.Goodbye(2); })) {
    BOOST_TEST_REQUIRE(s.ok(), s.message());
  }
  const Status served = tcp.Served();
  BOOST_TEST_REQUIRE(served.ok(), served.message());
  for (const auto& m : members) BOOST_TEST((m->params == expected));
  BOOST_TEST((tcp.Params() == expected));
  for (int k = 0; k < 2; ++k) BOOST_TEST(tcp.shard(k).Stats().steps_undone == 0u);
  BOOST_TEST(tcp.Logged("undid") == 0u);
  BOOST_TEST(tcp.Closed() == 4u);  // each refused hello's link, on both shards
  BOOST_TEST(tcp.Said("said hello with completed step 0 where the shard has 1"));
  BOOST_TEST(tcp.Said("said hello with completed step 0 where the shard has 2"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace ps_elastic_test
}  // namespace dtrain::dist
