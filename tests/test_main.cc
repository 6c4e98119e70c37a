// The one translation unit that defines Boost.Test's main for each test executable.
#define BOOST_TEST_MODULE dtrain
#include <boost/test/unit_test.hpp>
