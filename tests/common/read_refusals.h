// A Boost.Test check that a reader refused a file the way dtrain promises: the error names the
// file first and says what was wrong with it.
//
//   CheckReadRefused(ReadIdx(cut, labels), cut, "truncated");
#pragma once

#include <boost/test/unit_test.hpp>
#include <string>
#include <string_view>

#include "common/text_checks.h"
#include "core/status.h"

namespace dtrain::testing {

template <typename T>
void CheckReadRefused(const Result<T>& read, const std::string& path, std::string_view fragment) {
  BOOST_TEST_REQUIRE(!read.ok(), "accepted, expected: " << fragment);
  BOOST_TEST(StartsWith(read.status().message(), path));
  BOOST_TEST(Mentions(read.status().message(), fragment));
}

}  // namespace dtrain::testing
