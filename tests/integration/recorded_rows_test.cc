// The reading of DTRAIN_RECORD_ROWS files (recorded_rows.h) on files written here: a step is
// its members' rows, a redone step counted once; with backup workers' masks, only the positions a
// step's mask took count, a late replica's skipped steps included, a step redone after a
// restart is its last take, masks and all, and a step is the take of the world whose mask applied
// it.
#include <boost/test/unit_test.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "integration/recorded_rows.h"

namespace dtrain::testing {
namespace recorded_rows_test {

// Rank r's file under `prefix` holds `lines[r]`, each ended by a newline, then `tail` unended.
void WriteFiles(const std::string& prefix, const std::vector<std::string>& lines,
                const std::string& tail = "") {
  for (std::size_t rank = 0; rank < lines.size(); ++rank) {
    std::ofstream(prefix + "." + std::to_string(rank)) << lines[rank] << tail;
  }
}

std::vector<int> Rows(std::initializer_list<int> rows) { return rows; }

BOOST_AUTO_TEST_SUITE(recorded_rows)

BOOST_AUTO_TEST_CASE(without_masks_a_step_is_its_members_rows_and_a_redo_counts_once) {
  TempDir dir;
  WriteFiles(dir.Path("taken"), {"0 0 2 0 4 1\n0 1 2 0 0\n0 1 2 0 0\n", "0 0 2 1 3 2\n0 1 2 1 5\n"},
             "0 2 2 1 7");  // a killed writer's last line, without its newline
  const TakenSteps steps = ReadTakenSteps(dir.Path("taken"), 2);
  BOOST_TEST(steps.rows.at({0, 0}) == Rows({1, 2, 3, 4}));
  BOOST_TEST(steps.rows.at({0, 1}) == Rows({0, 5}));
  BOOST_TEST(steps.redone == 1);
  BOOST_TEST(steps.left_out == 0);
  BOOST_TEST(steps.rows.count({0, 2}) == 0u);
  BOOST_TEST(steps.incomplete.count({0, 2}) == 0u);
}

BOOST_AUTO_TEST_CASE(a_mask_counts_only_the_positions_it_took) {
  TempDir dir;
  // Step 0 leaves position 2 out (mask 0b011); step 1 takes its rows 5 and 6 again, with every
  // gradient (no mask line).
  WriteFiles(dir.Path("taken"),
             {"0 0 3 0 1 2\nT 0 0 3 3\n0 1 3 0 5 6 7\n", "0 0 3 1 3 4\nT 0 0 3 3\n0 1 3 1 8 9\n",
              "0 0 3 2 5 6\nT 0 0 3 3\n0 1 3 2 10 11\n"});
  const TakenSteps steps = ReadTakenSteps(dir.Path("taken"), 3);
  BOOST_TEST(steps.rows.at({0, 0}) == Rows({1, 2, 3, 4}));
  BOOST_TEST(steps.rows.at({0, 1}) == Rows({5, 6, 7, 8, 9, 10, 11}));
  BOOST_TEST(steps.left_out == 1);
}

BOOST_AUTO_TEST_CASE(a_late_replica_records_the_masks_of_the_steps_it_skipped) {
  TempDir dir;
  // Position 2's gradient of step 0 came after steps 0 and 1 were applied without it: it takes
  // step 2 next, and records no rows for step 1.
  WriteFiles(dir.Path("taken"), {"0 0 3 0 1\nT 0 0 3 3\n0 1 3 0 3 4\nT 0 1 3 3\n0 2 3 0 9\n",
                                 "0 0 3 1 2\nT 0 0 3 3\n0 1 3 1 5\nT 0 1 3 3\n0 2 3 1 10\n",
                                 "0 0 3 2 3\nT 0 0 3 3 3\n0 2 3 2 4 5 11\n"});
  const TakenSteps steps = ReadTakenSteps(dir.Path("taken"), 3);
  BOOST_TEST(steps.rows.at({0, 0}) == Rows({1, 2}));
  BOOST_TEST(steps.rows.at({0, 1}) == Rows({3, 4, 5}));
  BOOST_TEST(steps.rows.at({0, 2}) == Rows({4, 5, 9, 10, 11}));
  BOOST_TEST(steps.left_out == 2);
}

BOOST_AUTO_TEST_CASE(with_masks_a_redone_step_is_its_last_take) {
  TempDir dir;
  // Steps 0 and 1 are taken, then redone after a restart: step 0 with every gradient this time
  // (its mask line is the first take's), so step 1 has other rows at each position.
  WriteFiles(dir.Path("taken"), {"0 0 2 0 1\nT 0 0 2 1\n0 1 2 0 2 3\n0 0 2 0 1\n0 1 2 0 3\n",
                                 "0 0 2 1 2\nT 0 0 2 1\n0 1 2 1 4\n0 0 2 1 2\n0 1 2 1 4\n"});
  const TakenSteps steps = ReadTakenSteps(dir.Path("taken"), 2);
  BOOST_TEST(steps.rows.at({0, 0}) == Rows({1, 2}));
  BOOST_TEST(steps.rows.at({0, 1}) == Rows({3, 4}));
  BOOST_TEST(steps.redone == 4);
  BOOST_TEST(steps.left_out == 0);
}

BOOST_AUTO_TEST_CASE(a_taken_position_that_recorded_nothing_leaves_its_step_incomplete) {
  TempDir dir;
  WriteFiles(dir.Path("taken"), {"0 0 2 0 1\nT 0 0 2 3\n", "T 0 0 2 3\n"});
  const TakenSteps steps = ReadTakenSteps(dir.Path("taken"), 2);
  BOOST_TEST(steps.rows.count({0, 0}) == 0u);
  BOOST_TEST(steps.incomplete.count({0, 0}) == 1u);
}

// An elastic job: a membership of three took step 1 but lost rank 1 before it was applied (no
// mask in that world); the two survivors redid it as a membership of two, which left rank 2's
// gradient (position 1 there) out. Only the world whose mask applied the step counts.
BOOST_AUTO_TEST_CASE(a_step_is_the_take_of_the_world_whose_mask_applied_it) {
  TempDir dir;
  WriteFiles(dir.Path("taken"), {"0 0 3 0 1\nT 0 0 3 7\n0 1 3 0 4\n0 1 2 0 4 5\nT 0 1 2 1\n",
                                 "0 0 3 1 2\nT 0 0 3 7\n0 1 3 1 5\n",
                                 "0 0 3 2 3\nT 0 0 3 7\n0 1 3 2 6\n0 1 2 1 6 7\nT 0 1 2 1\n"});
  const TakenSteps steps = ReadTakenSteps(dir.Path("taken"), 3);
  BOOST_TEST(steps.rows.at({0, 0}) == Rows({1, 2, 3}));
  BOOST_TEST(steps.rows.at({0, 1}) == Rows({4, 5}));
  BOOST_TEST(steps.left_out == 1);
  BOOST_TEST(steps.smaller_worlds == 1);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace recorded_rows_test
}  // namespace dtrain::testing
