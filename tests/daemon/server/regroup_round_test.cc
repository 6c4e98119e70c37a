// The membership of an elastic sync ring attempt (daemon/server/regroup_round.h), without
// processes: losses, joiners, regroup requests and deadlines in, rounds' answers out.
#include "daemon/server/regroup_round.h"

#include <boost/test/unit_test.hpp>
#include <optional>
#include <string>
#include <vector>

namespace dtrain::server {
namespace {

using Ranks = std::vector<int>;
using Texts = std::vector<std::string>;

bool Has(const std::optional<std::string>& text, const std::string& part) {
  return text && text->find(part) != std::string::npos;
}

// A 3-worker job (min_workers 2) that lost rank 2 and regrouped as {0, 1} at step 40.
RegroupRound AfterLosingTwo() {
  RegroupRound round(3, 2);
  round.Lost(2, 40);
  round.Asked({0, 0, 41});
  const RegroupStep done = round.Asked({1, 0, 40});
  BOOST_TEST_REQUIRE(done.answer.has_value());
  return round;
}

BOOST_AUTO_TEST_SUITE(regroup_round)

BOOST_AUTO_TEST_CASE(a_loss_is_an_event_and_the_survivors_regroup_behind_the_slowest) {
  RegroupRound round(3, 2);
  const RegroupStep lost = round.Lost(2, 40);
  BOOST_TEST(lost.events == Texts{"worker 2 lost at step 40, 2 carry on"});
  BOOST_TEST(lost.round_began);
  BOOST_TEST(lost.notify.empty());  // their rings fail with its links
  BOOST_TEST(!lost.failure);
  BOOST_TEST(round.members() == Ranks({0, 1}));

  BOOST_TEST(!round.Asked({0, 0, 41}).answer);
  const RegroupStep done = round.Asked({1, 0, 40});
  BOOST_REQUIRE(done.answer);
  BOOST_TEST(done.answer->membership == 1);
  BOOST_TEST(done.answer->members == Ranks({0, 1}));
  BOOST_TEST(done.answer->leader == 1);  // the smaller completed step: 41 is rolled back
  BOOST_TEST(done.answer->step == 40);
  BOOST_TEST(done.events.empty());
  BOOST_TEST(!done.failure);
  BOOST_TEST(round.epoch() == 1);
  BOOST_TEST(!round.round_open());
}

BOOST_AUTO_TEST_CASE(equal_steps_make_the_lowest_rank_the_leader) {
  RegroupRound round(4, 2);
  round.Lost(0, 9);
  round.Asked({3, 0, 9});
  round.Asked({1, 0, 9});
  const RegroupStep done = round.Asked({2, 0, 9});
  BOOST_REQUIRE(done.answer);
  BOOST_TEST(done.answer->leader == 1);
  BOOST_TEST(done.answer->members == Ranks({1, 2, 3}));
}

BOOST_AUTO_TEST_CASE(a_replacement_is_announced_to_the_members_and_joins_but_never_leads) {
  RegroupRound round = AfterLosingTwo();
  const RegroupStep joined = round.Joined(2);
  BOOST_TEST(joined.notify == Ranks({0, 1}));
  BOOST_TEST(joined.round_began);
  BOOST_TEST(round.AnswerEpoch(2) == 2);

  BOOST_TEST(!round.Asked({2, -1, -1}).answer);
  BOOST_TEST(!round.Asked({1, 1, 50}).answer);
  const RegroupStep done = round.Asked({0, 1, 50});
  BOOST_REQUIRE(done.answer);
  BOOST_TEST(done.answer->membership == 2);
  BOOST_TEST(done.answer->members == Ranks({0, 1, 2}));
  BOOST_TEST(done.answer->leader == 0);
  BOOST_TEST(done.events == Texts{"worker 2 joined at step 50: 3 of 3"});
}

BOOST_AUTO_TEST_CASE(losing_below_min_workers_fails_the_attempt) {
  RegroupRound round = AfterLosingTwo();
  const RegroupStep lost = round.Lost(0, 60);
  BOOST_TEST(lost.events == Texts{"worker 0 lost at step 60, 1 carry on"});
  BOOST_TEST(Has(lost.failure, "only 1 of 3 workers remain (cluster.min_workers = 2)"));
}

BOOST_AUTO_TEST_CASE(a_round_with_neither_loss_nor_join_fails_the_attempt) {
  RegroupRound round(3, 2);
  const RegroupStep first = round.Asked({1, 0, 5});
  BOOST_TEST(first.round_began);
  round.Asked({0, 0, 5});
  const RegroupStep done = round.Asked({2, 0, 5});
  BOOST_TEST(!done.answer);
  BOOST_TEST(Has(done.failure, "no worker lost or joined"));
}

BOOST_AUTO_TEST_CASE(at_the_deadline_the_silent_are_killed_as_lost_and_the_rest_go_on) {
  RegroupRound round(3, 1);
  round.Lost(2, 30);
  round.Asked({0, 0, 31});
  const RegroupStep expired = round.DeadlinePassed(31);
  BOOST_TEST(expired.kill == Ranks{1});
  BOOST_TEST(expired.events == Texts{"worker 1 lost at step 31, 1 carry on"});
  BOOST_REQUIRE(expired.answer);
  BOOST_TEST(expired.answer->members == Ranks{0});
  BOOST_TEST(expired.answer->leader == 0);
}

BOOST_AUTO_TEST_CASE(at_the_deadline_fewer_than_min_workers_fail_the_attempt) {
  RegroupRound round(3, 2);
  round.Lost(2, 30);
  round.Asked({0, 0, 31});
  const RegroupStep expired = round.DeadlinePassed(31);
  BOOST_TEST(expired.kill == Ranks{1});
  BOOST_TEST(!expired.answer);
  BOOST_TEST(Has(expired.failure, "only 1 of 3 workers asked"));
}

BOOST_AUTO_TEST_CASE(a_deadline_with_no_round_open_changes_nothing) {
  RegroupRound round = AfterLosingTwo();
  const RegroupStep nothing = round.DeadlinePassed(45);
  BOOST_TEST(nothing.kill.empty());
  BOOST_TEST(!nothing.answer);
  BOOST_TEST(!nothing.failure);
  BOOST_TEST(round.members() == Ranks({0, 1}));
}

BOOST_AUTO_TEST_CASE(a_replacement_admitted_during_a_round_waits_for_the_next) {
  RegroupRound round(3, 1);
  round.Lost(1, 10);
  round.Lost(2, 10);
  const RegroupStep joined = round.Joined(1);
  BOOST_TEST(joined.notify.empty());
  BOOST_TEST(!joined.round_began);
  BOOST_TEST(round.AnswerEpoch(1) == 2);
  BOOST_TEST(!round.Asked({1, -1, -1}).answer);  // kept for the next round

  const RegroupStep first = round.Asked({0, 0, 10});
  BOOST_REQUIRE(first.answer);
  BOOST_TEST(first.answer->members == Ranks{0});
  BOOST_TEST(first.round_began);  // the next one, for the replacement
  BOOST_TEST(first.notify == Ranks{0});

  const RegroupStep second = round.Asked({0, 1, 12});
  BOOST_REQUIRE(second.answer);
  BOOST_TEST(second.answer->membership == 2);
  BOOST_TEST(second.answer->members == Ranks({0, 1}));
  BOOST_TEST(second.answer->leader == 0);
  BOOST_TEST(second.events == Texts{"worker 1 joined at step 12: 2 of 3"});
}

BOOST_AUTO_TEST_CASE(a_member_lost_after_asking_is_left_out_of_the_answer) {
  RegroupRound round(4, 2);
  round.Lost(3, 7);
  round.Asked({1, 0, 7});
  const RegroupStep lost = round.Lost(1, 7);
  BOOST_TEST(lost.events == Texts{"worker 1 lost at step 7, 2 carry on"});
  round.Asked({0, 0, 8});
  const RegroupStep done = round.Asked({2, 0, 8});
  BOOST_REQUIRE(done.answer);
  BOOST_TEST(done.answer->members == Ranks({0, 2}));
}

BOOST_AUTO_TEST_CASE(a_replacement_lost_before_its_round_completes_is_forgotten_quietly) {
  RegroupRound round = AfterLosingTwo();
  round.Joined(2);
  const RegroupStep lost = round.Lost(2, 50);
  BOOST_TEST(lost.events.empty());
  BOOST_TEST(!lost.failure);
  round.Asked({0, 1, 50});
  const RegroupStep done = round.Asked({1, 1, 50});
  BOOST_REQUIRE(done.answer);
  BOOST_TEST(done.answer->members == Ranks({0, 1}));
}

BOOST_AUTO_TEST_CASE(a_request_from_outside_the_membership_is_refused) {
  RegroupRound round = AfterLosingTwo();
  const RegroupStep step = round.Asked({2, 0, 40});
  BOOST_TEST(Has(step.refused, "worker 2 is not a member"));
  BOOST_TEST(!step.answer);
  BOOST_TEST(!round.round_open());
}

BOOST_AUTO_TEST_CASE(only_replacements_asking_cannot_regroup) {
  RegroupRound round(2, 1);
  round.Lost(1, 3);
  round.Asked({0, 0, 3});  // epoch 1: {0}
  round.Joined(1);
  round.Asked({1, -1, -1});
  const RegroupStep expired = round.DeadlinePassed(4);
  BOOST_TEST(expired.kill == Ranks{0});
  BOOST_TEST(!expired.answer);
  BOOST_TEST(Has(expired.failure, "no worker that holds the job's state asked"));
}

BOOST_AUTO_TEST_CASE(a_job_started_with_fewer_replicas_grows_as_the_others_join) {
  RegroupRound round(3, 2, {0, 1});  // rank 2 had no cores yet
  BOOST_TEST(round.members() == Ranks({0, 1}));
  BOOST_TEST(round.epoch() == 0);
  // A rank never started is no member: its loss changes nothing.
  const RegroupStep unstarted = round.Lost(2, 5);
  BOOST_TEST(unstarted.events.empty());
  BOOST_TEST(!round.round_open());

  const RegroupStep joined = round.Joined(2);
  BOOST_TEST(joined.notify == Ranks({0, 1}));
  BOOST_TEST(joined.round_began);
  round.Asked({2, -1, -1});
  round.Asked({1, 0, 30});
  const RegroupStep done = round.Asked({0, 0, 30});
  BOOST_REQUIRE(done.answer);
  BOOST_TEST(done.answer->membership == 1);
  BOOST_TEST(done.answer->members == Ranks({0, 1, 2}));
  BOOST_TEST(done.answer->leader == 0);
  BOOST_TEST(done.answer->step == 30);
  BOOST_TEST(done.events == Texts{"worker 2 joined at step 30: 3 of 3"});
}

BOOST_AUTO_TEST_CASE(a_job_started_with_min_workers_fails_at_its_first_loss) {
  RegroupRound round(3, 2, {0, 1});
  const RegroupStep lost = round.Lost(1, 7);
  BOOST_TEST(Has(lost.failure, "only 1 of 3 workers remain"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace dtrain::server
