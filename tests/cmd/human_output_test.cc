// What dtrain prints for people: the progress bar's epoch (1-based, never past the plan) and
// metric values in plain notation with their units.
#include <boost/test/unit_test.hpp>

#include "cmd/human.h"
#include "cmd/progress.h"

namespace dtrain::cli {

BOOST_AUTO_TEST_SUITE(human_output)

BOOST_AUTO_TEST_CASE(the_epoch_shown_never_passes_the_planned_count) {
  BOOST_TEST(EpochShown(0, 1) == 1);
  BOOST_TEST(EpochShown(1, 1) == 1);  // after the last step of a one-epoch run: not "2/1"
  BOOST_TEST(EpochShown(2, 3) == 3);
  BOOST_TEST(EpochShown(3, 3) == 3);
  BOOST_TEST(EpochShown(7, 0) == 8);  // no epoch limit (train.steps): the epoch it is in
}

BOOST_AUTO_TEST_CASE(metrics_read_in_plain_notation_with_units) {
  BOOST_TEST(FormatMetric("peak_rss_bytes", 94449700.0) == "90.1 MiB");
  BOOST_TEST(FormatMetric("bytes_sent", 512.0) == "512 B");
  BOOST_TEST(FormatMetric("comm_seconds", 0.0426703) == "0.0426703 s");
  BOOST_TEST(FormatMetric("bytebytes", 84652600.0) == "84652600");  // "bytes" not a word of it
  BOOST_TEST(FormatMetric("samples_per_sec", 13292.34) == "13292.3");
  BOOST_TEST(FormatMetric("keys_pulled", 84652600.0) == "84652600");  // was 8.46526e+07
  BOOST_TEST(FormatMetric("eval_accuracy", 0.8777) == "0.8777");
  BOOST_TEST(FormatMetric("lr", 1e-5) == "1e-05");
  BOOST_TEST(FormatMetric("train_loss", 0.0) == "0");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace dtrain::cli
