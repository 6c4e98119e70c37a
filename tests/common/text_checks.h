// Boost.Test predicates about text, whose failure messages quote both sides:
//
//   BOOST_TEST(Mentions(status.message(), "timeout"));
//   BOOST_TEST(StartsWith(error, "authentication refused by"));
//
// Pure functions: safe for concurrent use.
#pragma once

#include <boost/test/unit_test.hpp>
#include <string>
#include <string_view>

namespace dtrain::testing {

inline boost::test_tools::predicate_result Mentions(const std::string& text,
                                                    std::string_view part) {
  if (text.find(part) != std::string::npos) return true;
  boost::test_tools::predicate_result r(false);
  r.message() << "\"" << text << "\" does not mention \"" << part << "\"";
  return r;
}

inline boost::test_tools::predicate_result StartsWith(const std::string& text,
                                                      std::string_view prefix) {
  if (text.starts_with(prefix)) return true;
  boost::test_tools::predicate_result r(false);
  r.message() << "\"" << text << "\" does not start with \"" << prefix << "\"";
  return r;
}

}  // namespace dtrain::testing
