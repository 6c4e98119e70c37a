// The membership of an elastic attempt (sync or local) (daemon/server/regroup_round.h), without
// processes: losses, joiners, regroup requests and deadlines in, rounds' answers out.
#include "daemon/server/regroup_round.h"

#include <boost/test/unit_test.hpp>
#include <optional>
#include <string>
#include <vector>

namespace dtrain::server {
namespace regroup_round_test {

using Ranks = std::vector<int>;
using Texts = std::vector<std::string>;

// Lost's `replaced`: whether the daemon starts a replacement for the lost rank.
constexpr bool kReplaced = true, kNotReplaced = false;

bool Has(const std::optional<std::string>& text, const std::string& part) {
  return text && text->find(part) != std::string::npos;
}

// A 3-worker job (min_workers 2) that lost rank 2 and regrouped as {0, 1} at step 40.
RegroupRound AfterLosingTwo() {
  RegroupRound round(3, 2);
  round.Lost(2, 40, kReplaced);
  round.Asked({0, 0, 41});
  const RegroupStep done = round.Asked({1, 0, 40});
  BOOST_TEST_REQUIRE(done.answer.has_value());
  return round;
}

BOOST_AUTO_TEST_SUITE(regroup_round)

BOOST_AUTO_TEST_CASE(a_loss_is_an_event_and_the_survivors_regroup_behind_the_slowest) {
  RegroupRound round(3, 2);
  const RegroupStep lost = round.Lost(2, 40, kReplaced);
  BOOST_TEST(lost.events == Texts{"worker 2 lost at step 40, 2 carry on"});
  BOOST_TEST(lost.round_began);
  // Told at once: a local job's member would go on alone until its next average.
  BOOST_TEST(lost.notify == Ranks({0, 1}));
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

// On a parameter server the shard holds the newest step's state: the member that saw it leads
// (one that left between steps, with backup workers, may be behind).
BOOST_AUTO_TEST_CASE(on_a_parameter_server_the_newest_member_leads) {
  RegroupRound round(3, 2, {}, 0, /*newest_leads=*/true);
  round.Lost(2, 40, kReplaced);
  BOOST_TEST(!round.Asked({0, 0, 40}).answer);
  const RegroupStep done = round.Asked({1, 0, 41});
  BOOST_REQUIRE(done.answer);
  BOOST_TEST(done.answer->leader == 1);
  BOOST_TEST(done.answer->step == 41);
}

BOOST_AUTO_TEST_CASE(a_member_that_asks_first_opens_the_round_and_the_others_are_told) {
  RegroupRound round(3, 2);
  const RegroupStep asked = round.Asked({1, 0, 40});  // its ring failed before the loss was seen
  BOOST_TEST(asked.round_began);
  BOOST_TEST(asked.notify == Ranks({0, 2}));  // not the asker: its request is answered
  const RegroupStep lost = round.Lost(2, 40, kReplaced);
  BOOST_TEST(lost.notify.empty());  // told already
  const RegroupStep done = round.Asked({0, 0, 40});
  BOOST_REQUIRE(done.answer);
  BOOST_TEST(done.answer->members == Ranks({0, 1}));
}

BOOST_AUTO_TEST_CASE(equal_steps_make_the_lowest_rank_the_leader) {
  RegroupRound round(4, 2);
  round.Lost(0, 9, kReplaced);
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

BOOST_AUTO_TEST_CASE(losing_below_min_workers_with_no_replacement_coming_fails_the_attempt) {
  RegroupRound round(3, 2);
  round.Lost(2, 40, kNotReplaced);  // the restarts are spent
  round.Asked({0, 0, 40});
  BOOST_REQUIRE(round.Asked({1, 0, 40}).answer);
  const RegroupStep lost = round.Lost(0, 60, kNotReplaced);
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
  round.Lost(2, 30, kReplaced);
  round.Asked({0, 0, 31});
  const RegroupStep expired = round.DeadlinePassed(31, 60);
  BOOST_TEST(expired.kill == Ranks{1});
  BOOST_TEST(expired.events == Texts{"worker 1 lost at step 31, 1 carry on"});
  BOOST_REQUIRE(expired.answer);
  BOOST_TEST(expired.answer->members == Ranks{0});
  BOOST_TEST(expired.answer->leader == 0);
}

BOOST_AUTO_TEST_CASE(at_the_deadline_fewer_than_min_workers_fail_the_attempt) {
  RegroupRound round(3, 2);
  round.Lost(2, 30, kReplaced);
  round.Asked({0, 0, 31});
  const RegroupStep expired = round.DeadlinePassed(31, 60);
  BOOST_TEST(expired.kill == Ranks{1});
  BOOST_TEST(!expired.answer);
  BOOST_TEST(Has(expired.failure, "only 1 of 3 workers asked"));
}

BOOST_AUTO_TEST_CASE(a_deadline_with_no_round_open_changes_nothing) {
  RegroupRound round = AfterLosingTwo();
  const RegroupStep nothing = round.DeadlinePassed(45, 60);
  BOOST_TEST(nothing.kill.empty());
  BOOST_TEST(!nothing.answer);
  BOOST_TEST(!nothing.failure);
  BOOST_TEST(round.members() == Ranks({0, 1}));
}

BOOST_AUTO_TEST_CASE(a_replacement_admitted_during_a_round_waits_for_the_next) {
  RegroupRound round(3, 1);
  round.Lost(1, 10, kReplaced);
  round.Lost(2, 10, kReplaced);
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
  round.Lost(3, 7, kReplaced);
  round.Asked({1, 0, 7});
  const RegroupStep lost = round.Lost(1, 7, kReplaced);
  BOOST_TEST(lost.events == Texts{"worker 1 lost at step 7, 2 carry on"});
  round.Asked({0, 0, 8});
  const RegroupStep done = round.Asked({2, 0, 8});
  BOOST_REQUIRE(done.answer);
  BOOST_TEST(done.answer->members == Ranks({0, 2}));
}

BOOST_AUTO_TEST_CASE(a_replacement_lost_before_its_round_completes_is_forgotten_quietly) {
  RegroupRound round = AfterLosingTwo();
  round.Joined(2);
  const RegroupStep lost = round.Lost(2, 50, kReplaced);
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
  round.Lost(1, 3, kReplaced);
  round.Asked({0, 0, 3});  // epoch 1: {0}
  round.Joined(1);
  round.Asked({1, -1, -1});
  const RegroupStep expired = round.DeadlinePassed(4, 60);
  BOOST_TEST(expired.kill == Ranks{0});
  BOOST_TEST(!expired.answer);
  BOOST_TEST(Has(expired.failure, "no worker that holds the job's state asked"));
}

BOOST_AUTO_TEST_CASE(a_job_started_with_fewer_replicas_grows_as_the_others_join) {
  RegroupRound round(3, 2, {0, 1});  // rank 2 had no cores yet
  BOOST_TEST(round.members() == Ranks({0, 1}));
  BOOST_TEST(round.epoch() == 0);
  // A rank never started is no member: its loss changes nothing.
  const RegroupStep unstarted = round.Lost(2, 5, kReplaced);
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

// workers = 2, max_workers = 3 (min_workers unset: 2): a third member joins beyond the workers,
// and its loss leaves the two others carrying on without a replacement.
BOOST_AUTO_TEST_CASE(a_job_grows_beyond_its_workers_and_carries_on_without_the_extra_one) {
  RegroupRound round(2, 2, {}, 3);
  BOOST_TEST(round.members() == Ranks({0, 1}));
  round.Joined(2);
  round.Asked({2, -1, -1});
  round.Asked({0, 0, 12});
  const RegroupStep grown = round.Asked({1, 0, 12});
  BOOST_REQUIRE(grown.answer);
  BOOST_TEST(grown.answer->members == Ranks({0, 1, 2}));
  BOOST_TEST(grown.events == Texts{"worker 2 joined at step 12: 3 of 2..3"});

  const RegroupStep lost = round.Lost(2, 20, kNotReplaced);
  BOOST_TEST(!lost.failure);
  BOOST_TEST(lost.events == Texts{"worker 2 lost at step 20, 2 carry on"});
  round.Asked({1, 1, 21});
  const RegroupStep regrouped = round.Asked({0, 1, 20});
  BOOST_REQUIRE(regrouped.answer);
  BOOST_TEST(regrouped.answer->members == Ranks({0, 1}));
  BOOST_TEST(regrouped.answer->leader == 0);
  BOOST_TEST(regrouped.answer->step == 20);
}

BOOST_AUTO_TEST_CASE(a_job_started_with_min_workers_fails_at_a_loss_not_replaced) {
  RegroupRound round(3, 2, {0, 1});
  const RegroupStep lost = round.Lost(1, 7, kNotReplaced);
  BOOST_TEST(Has(lost.failure, "only 1 of 3 workers remain"));
}

// Below min_workers: the survivors wait for the replacements being started.

// A 3-worker job (min_workers 2) whose ranks 1 and 2 were lost at step 40, both being replaced:
// rank 0 alone waits, having asked with 41 steps completed.
RegroupRound WaitingAlone() {
  RegroupRound round(3, 2);
  round.Lost(1, 40, kReplaced);
  round.Lost(2, 40, kReplaced);
  round.Asked({0, 0, 41});
  return round;
}

BOOST_AUTO_TEST_CASE(below_min_workers_the_survivor_waits_for_replacements) {
  RegroupRound round(3, 2);
  const RegroupStep first = round.Lost(1, 40, kReplaced);
  BOOST_TEST(first.events == Texts{"worker 1 lost at step 40, 2 carry on"});
  const RegroupStep second = round.Lost(2, 40, kReplaced);
  BOOST_TEST(second.events ==
             Texts{"worker 2 lost at step 40, 1 waits for replacements (cluster.min_workers = 2)"});
  BOOST_TEST(!second.failure);
  BOOST_TEST(round.members() == Ranks{0});
  const RegroupStep asked = round.Asked({0, 0, 41});
  BOOST_TEST(!asked.answer);  // everyone expected asked, but alone
  BOOST_TEST(!asked.failure);
  BOOST_TEST(round.round_open());
}

BOOST_AUTO_TEST_CASE(the_waiting_round_completes_once_joiners_make_up_min_workers) {
  RegroupRound round = WaitingAlone();
  const RegroupStep joined = round.Joined(1);
  BOOST_TEST(!joined.round_began);  // it joins the open round
  BOOST_TEST(joined.notify.empty());
  BOOST_TEST(round.AnswerEpoch(1) == 1);
  const RegroupStep done = round.Asked({1, -1, -1});
  BOOST_REQUIRE(done.answer);
  BOOST_TEST(done.answer->membership == 1);
  BOOST_TEST(done.answer->members == Ranks({0, 1}));
  BOOST_TEST(done.answer->leader == 0);
  BOOST_TEST(done.answer->step == 41);
  BOOST_TEST(done.events == Texts{"worker 1 joined at step 41: 2 of 3"});

  // The other replacement joins the next round, as when none is short.
  const RegroupStep later = round.Joined(2);
  BOOST_TEST(later.round_began);
  BOOST_TEST(later.notify == Ranks({0, 1}));
  round.Asked({2, -1, -1});
  round.Asked({1, 1, 45});
  const RegroupStep all = round.Asked({0, 1, 45});
  BOOST_REQUIRE(all.answer);
  BOOST_TEST(all.answer->members == Ranks({0, 1, 2}));
  BOOST_TEST(all.events == Texts{"worker 2 joined at step 45: 3 of 3"});
}

BOOST_AUTO_TEST_CASE(joiners_admitted_while_short_all_join_the_waiting_round) {
  RegroupRound round = WaitingAlone();
  round.Joined(2);
  round.Joined(1);
  BOOST_TEST(!round.Asked({2, -1, -1}).answer);  // rank 1 is expected too
  const RegroupStep done = round.Asked({1, -1, -1});
  BOOST_REQUIRE(done.answer);
  BOOST_TEST(done.answer->members == Ranks({0, 1, 2}));
  BOOST_TEST(done.events ==
             Texts({"worker 1 joined at step 41: 3 of 3", "worker 2 joined at step 41: 3 of 3"}));
}

BOOST_AUTO_TEST_CASE(a_round_falling_short_takes_in_the_joiners_waiting_for_the_next) {
  RegroupRound round(3, 2);
  round.Lost(1, 40, kReplaced);  // a round of {0, 2}
  round.Joined(1);
  BOOST_TEST(round.AnswerEpoch(1) == 2);
  round.Asked({1, -1, -1});  // waits for epoch 2's answer
  round.Asked({0, 0, 41});
  const RegroupStep lost = round.Lost(2, 41, kReplaced);
  BOOST_REQUIRE(lost.answer);
  BOOST_TEST(lost.answer->membership == 1);
  BOOST_TEST(lost.answer->members == Ranks({0, 1}));
  BOOST_TEST(lost.answers_the_next_round_too);
  BOOST_TEST(lost.events ==
             Texts({"worker 2 lost at step 41, 1 waits for replacements (cluster.min_workers = 2)",
                    "worker 1 joined at step 41: 2 of 3"}));
}

BOOST_AUTO_TEST_CASE(still_short_at_its_deadline_the_waiting_round_fails_the_attempt) {
  RegroupRound round = WaitingAlone();
  round.Joined(1);  // admitted, but silent
  const RegroupStep expired = round.DeadlinePassed(41, 2.5);
  BOOST_TEST(expired.kill == Ranks{1});
  BOOST_TEST(!expired.answer);
  BOOST_TEST(Has(expired.failure,
                 "only 1 of 3 workers remain (cluster.min_workers = 2); waited "
                 "2.5 s for replacements"));
}

BOOST_AUTO_TEST_CASE(with_no_survivor_the_attempt_fails_at_once) {
  RegroupRound round = WaitingAlone();
  const RegroupStep lost = round.Lost(0, 41, kReplaced);
  BOOST_TEST(Has(lost.failure, "only 0 of 3 workers remain (cluster.min_workers = 2)"));
}

BOOST_AUTO_TEST_CASE(a_replacement_given_up_fails_the_round_that_cannot_reach_min_workers) {
  RegroupRound round = WaitingAlone();
  BOOST_TEST(!round.NotReplaced(2).failure);  // rank 1's is still coming
  const RegroupStep given_up = round.NotReplaced(1);
  BOOST_TEST(Has(given_up.failure,
                 "worker 1 is not replaced: only 1 of 3 workers remain (cluster.min_workers = 2)"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace regroup_round_test
}  // namespace dtrain::server
