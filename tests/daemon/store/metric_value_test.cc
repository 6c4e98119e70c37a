// Metric values in JSON (daemon/store/metric_value.h): finite numbers as numbers, NaN as null,
// the infinities as "inf" and "-inf", each read back as what it was, through text too; and the
// worker channel's metric frames carry them so (control_request.h's ParseMetricPoints).
#include "daemon/store/metric_value.h"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>

#include "daemon/server/control_request.h"

namespace dtrain::store {
namespace metric_value_test {

using json = nlohmann::json;

double RoundTrip(double value) {
  return MetricValueFromJson(json::parse(json{{"v", MetricValueJson(value)}}.dump())["v"]).value();
}

BOOST_AUTO_TEST_SUITE(metric_value)

BOOST_AUTO_TEST_CASE(every_value_reads_back_as_what_it_was) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  BOOST_TEST(RoundTrip(0.25) == 0.25);
  BOOST_TEST(RoundTrip(0.0) == 0.0);
  BOOST_TEST(RoundTrip(-3e300) == -3e300);
  BOOST_TEST(RoundTrip(kInf) == kInf);
  BOOST_TEST(RoundTrip(-kInf) == -kInf);
  BOOST_TEST(std::isnan(RoundTrip(std::numeric_limits<double>::quiet_NaN())));
  BOOST_TEST(MetricValueJson(kInf) == "inf");
  BOOST_TEST(MetricValueJson(std::nan("")).is_null());
  BOOST_TEST(!MetricValueFromJson("nan").has_value());  // not what MetricValueJson writes
  BOOST_TEST(!MetricValueFromJson(json::object()).has_value());
}

BOOST_AUTO_TEST_CASE(a_workers_metric_frame_carries_nan_and_infinities_not_zeros) {
  const auto points = server::ParseMetricPoints(
      R"({"points": [{"step": 3, "epoch": 0.5, "name": "train_loss", "value": null},
                     {"step": 4, "epoch": 0.5, "name": "train_loss", "value": "-inf"},
                     {"step": 5, "epoch": 0.5, "name": "train_loss", "value": 1.5}]})");
  BOOST_REQUIRE(points.has_value());
  BOOST_REQUIRE(points->size() == 3u);
  BOOST_TEST(std::isnan((*points)[0].value));
  BOOST_TEST((*points)[1].value == -std::numeric_limits<double>::infinity());
  BOOST_TEST((*points)[2].value == 1.5);
  // A value that is not one: the frame is refused, not read as 0.
  BOOST_TEST(!server::ParseMetricPoints(R"({"points": [{"step": 1, "name": "x"}]})"));
  BOOST_TEST(!server::ParseMetricPoints(R"({"points": [{"step": 1, "name": "x", "value": "1"}]})"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace metric_value_test
}  // namespace dtrain::store
