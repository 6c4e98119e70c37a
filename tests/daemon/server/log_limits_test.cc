// The bounds on what a job's output costs the daemon: LineCutter cuts a long line (saying how much
// it dropped) without ever holding more than its maximum, however the output is chunked, and
// LogQuota keeps lines up to its byte budget, then drops and counts the rest.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "daemon/server/line_cutter.h"
#include "daemon/server/log_quota.h"

namespace dtrain::server {
namespace log_limits_test {

// Every line `cutter` hands out for `chunks`, then for the end of the output.
std::vector<std::string> Lines(LineCutter& cutter, const std::vector<std::string>& chunks) {
  std::vector<std::string> lines;
  const LineCutter::Sink sink = [&lines](std::string_view line) { lines.emplace_back(line); };
  for (const std::string& c : chunks) cutter.Feed(c, sink);
  cutter.Finish(sink);
  return lines;
}

BOOST_AUTO_TEST_SUITE(line_cutter)

BOOST_AUTO_TEST_CASE(short_lines_pass_whole_however_the_output_is_chunked) {
  LineCutter cutter(16);
  BOOST_TEST((Lines(cutter, {"ab", "c\n\nde", "f\ng"}) ==
              std::vector<std::string>{"abc", "", "def", "g"}));
  LineCutter exact(4);
  BOOST_TEST((Lines(exact, {"abcd\n", "abcd"}) == std::vector<std::string>{"abcd", "abcd"}));
  LineCutter empty(4);
  BOOST_TEST(Lines(empty, {}).empty());
}

BOOST_AUTO_TEST_CASE(a_long_line_keeps_its_start_and_says_how_much_was_cut) {
  LineCutter cutter(8);
  const std::vector<std::string> lines =
      Lines(cutter, {"0123456789", "abcdef", "\nnext\n", std::string(100, 'x')});
  BOOST_TEST((lines == std::vector<std::string>{"01234567" + CutNotice(8), "next",
                                                "xxxxxxxx" + CutNotice(92)}));
  BOOST_TEST(CutNotice(8) == " ... [line cut: 8 bytes dropped]");
}

BOOST_AUTO_TEST_CASE(a_line_of_many_mib_costs_no_more_than_the_maximum) {
  LineCutter cutter(4096);
  std::vector<std::string> lines;
  const LineCutter::Sink sink = [&lines](std::string_view line) { lines.emplace_back(line); };
  const std::string chunk(8192, 'y');
  for (int i = 0; i < 8192; ++i) cutter.Feed(chunk, sink);  // 64 MiB, no newline yet
  BOOST_TEST(lines.empty());
  cutter.Feed("tail\n", sink);
  BOOST_REQUIRE(lines.size() == 1u);
  BOOST_TEST(lines[0] == std::string(4096, 'y') + CutNotice((std::uint64_t{64} << 20) - 4096 + 4));
}

BOOST_AUTO_TEST_CASE(a_cut_never_splits_a_utf8_character) {
  // "é" is 2 bytes, "€" 3, "😀" 4: a cut at 5 bytes falls inside the second character each time.
  for (const std::string& c : {std::string("é"), std::string("€"), std::string("😀")}) {
    LineCutter cutter(5);
    const std::vector<std::string> lines = Lines(cutter, {"abc" + c + c + "\n"});
    BOOST_REQUIRE(lines.size() == 1u);
    const std::size_t kept = c.size() == 2 ? 5 : 3;  // "abcé" fits; "abc€" and "abc😀" do not
    const std::string expected_text = c.size() == 2 ? "abc" + c : "abc";
    BOOST_TEST(lines[0] == expected_text + CutNotice(3 + 2 * c.size() - kept), c);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(log_quota)

BOOST_AUTO_TEST_CASE(lines_are_kept_up_to_the_quota_then_dropped_and_counted) {
  constexpr std::uint64_t kRow = LogQuota::kRowCost;
  LogQuota quota(10 + 2 * kRow);
  BOOST_TEST(quota.Admit(4) == LogQuota::kKeep);
  BOOST_TEST(quota.Admit(6) == LogQuota::kKeep);  // exactly the quota, a row's cost included
  BOOST_TEST(quota.Admit(0) == LogQuota::kNote);  // an empty line is a row too
  BOOST_TEST(quota.Note() ==
             "log quota reached (266 B of lines this attempt): later lines are dropped and counted");
  BOOST_TEST(quota.Admit(1) == LogQuota::kDropped);  // one gap, at the end: nothing after it
  BOOST_TEST(quota.Admit(2047) == LogQuota::kDropped);
  BOOST_TEST(quota.dropped_lines() == 3u);
  BOOST_TEST(quota.dropped_bytes() == 2048u);
  BOOST_TEST(quota.SummaryLine() == "log quota reached: 3 lines (2 KiB) dropped");
}

BOOST_AUTO_TEST_CASE(a_line_larger_than_what_is_left_starts_the_gap) {
  LogQuota quota(64u << 20);
  BOOST_TEST(quota.Admit((64u << 20) - LogQuota::kRowCost - 200) == LogQuota::kKeep);
  BOOST_TEST(quota.Admit(100) == LogQuota::kNote);  // 100 + a row's cost: over by 28
  BOOST_TEST(quota.Admit(1) == LogQuota::kDropped);  // it would fit, but lines stay in order
  BOOST_TEST(quota.SummaryLine() == "log quota reached: 2 lines (101 B) dropped");
}

BOOST_AUTO_TEST_CASE(a_quota_charged_with_what_was_stored_before_keeps_only_the_rest) {
  // A user's quota: what the store held of their logs counts, and its notes say whose it is.
  LogQuota user(1000, "of uid 7's jobs in this store", "uid 7's log quota reached",
                900 - LogQuota::kRowCost);
  BOOST_TEST(user.Admit(0) == LogQuota::kKeep);
  BOOST_TEST(user.Admit(100) == LogQuota::kNote);
  BOOST_TEST(user.Note() == "uid 7's log quota reached (1000 B of lines of uid 7's jobs in this "
                            "store): later lines are dropped and counted");
  // Charged with more than it allows (the quota was lowered): nothing is kept.
  LogQuota over(1000, "this attempt", "log quota reached", 5000);
  BOOST_TEST(over.Admit(0) == LogQuota::kNote);
  BOOST_TEST(over.SummaryLine() == "log quota reached: 1 line (0 B) dropped");
}

BOOST_AUTO_TEST_CASE(the_count_so_far_is_noted_at_every_power_of_ten_from_1000) {
  LogQuota quota(1u << 20);
  BOOST_TEST(quota.Admit(2u << 20) == LogQuota::kNote);
  std::vector<std::uint64_t> noted;
  for (std::uint64_t line = 2; line <= 100000; ++line) {
    if (quota.Admit(1) == LogQuota::kNote) noted.push_back(quota.dropped_lines());
  }
  BOOST_TEST((noted == std::vector<std::uint64_t>{1000, 10000, 100000}));
  BOOST_TEST(quota.Note() == "log quota reached: 100000 lines (2.1 MiB) dropped so far");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace log_limits_test
}  // namespace dtrain::server
