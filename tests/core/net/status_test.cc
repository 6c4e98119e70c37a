// Status and Result (core/status.h): a failure keeps its code and message, Error(message) means
// kError, and a Result's status() carries the code of the failure it was built from.
#include "core/status.h"

#include <boost/test/unit_test.hpp>
#include <string>

namespace dtrain {
namespace status_test {

BOOST_AUTO_TEST_SUITE(status)

BOOST_AUTO_TEST_CASE(ok_status_has_code_ok_and_no_message) {
  const Status s = Status::Ok();
  BOOST_TEST(s.ok());
  BOOST_TEST((s.code() == StatusCode::kOk));
  BOOST_TEST(s.message().empty());
  BOOST_TEST((Status().code() == StatusCode::kOk));
}

BOOST_AUTO_TEST_CASE(error_without_a_code_is_a_plain_error) {
  const Status s = Status::Error("cannot open x.idx");
  BOOST_TEST(!s.ok());
  BOOST_TEST((s.code() == StatusCode::kError));
  BOOST_TEST(s.message() == "cannot open x.idx");
}

BOOST_AUTO_TEST_CASE(error_with_a_code_keeps_code_and_message) {
  const Status timeout = Status::Error(StatusCode::kTimeout, "timeout: no frame within 5 ms");
  BOOST_TEST(!timeout.ok());
  BOOST_TEST((timeout.code() == StatusCode::kTimeout));
  BOOST_TEST(timeout.message() == "timeout: no frame within 5 ms");
  const Status closed = Status::Error(StatusCode::kClosed, "closed: peer went away");
  BOOST_TEST(!closed.ok());
  BOOST_TEST((closed.code() == StatusCode::kClosed));
}

BOOST_AUTO_TEST_CASE(result_status_carries_the_code) {
  const Result<int> failed = Status::Error(StatusCode::kTimeout, "timeout: slow");
  BOOST_TEST(!failed.ok());
  BOOST_TEST((failed.status().code() == StatusCode::kTimeout));
  BOOST_TEST(failed.status().message() == "timeout: slow");
  const Result<int> value = 7;
  BOOST_TEST((value.status().code() == StatusCode::kOk));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace status_test
}  // namespace dtrain
