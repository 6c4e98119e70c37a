// Printable (cmd/terminal.h): what another user wrote reaches a terminal as text that cannot act
// on it, and text without controls is printed byte for byte.
#include <boost/test/unit_test.hpp>
#include <string>

#include "cmd/terminal.h"

namespace dtrain::cli {
namespace printable_test {

BOOST_AUTO_TEST_SUITE(printable)

BOOST_AUTO_TEST_CASE(text_without_controls_is_unchanged) {
  for (const std::string text : {"", "job 3: completed 189 steps", "C:\\data\\a.csv\ttab",
                                 "Ünïcödé ✓ 日本 \xf0\x9f\x98\x80", "\xc2\xa0 no-break space"}) {
    BOOST_TEST(Printable(text) == text);
  }
}

BOOST_AUTO_TEST_CASE(c0_controls_del_and_c1_controls_are_written_out) {
  BOOST_TEST(Printable("a\x1b[2Jb") == "a\\x1b[2Jb");
  BOOST_TEST(Printable("\r\n\a\x7f") == "\\x0d\\x0a\\x07\\x7f");
  BOOST_TEST(Printable("x\xc2\x9b" "31m") == "x\\u009b31m");  // CSI as one C1 character
  BOOST_TEST(Printable("line\nnext", Newlines::kKeepNewlines) == "line\nnext");
  BOOST_TEST(Printable(std::string("nul\0end", 7)) == "nul\\x00end");
}

BOOST_AUTO_TEST_CASE(bytes_that_are_not_utf8_are_written_out) {
  BOOST_TEST(Printable("\xff\xfe") == "\\xff\\xfe");
  BOOST_TEST(Printable("\xc0\xaf") == "\\xc0\\xaf");          // an overlong '/'
  BOOST_TEST(Printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate
  BOOST_TEST(Printable("\xe2\x9c") == "\\xe2\\x9c");          // cut short
  // Printing twice changes nothing more: the output has no controls left.
  const std::string once = Printable("\x1b]0;title\a\xff");
  BOOST_TEST(Printable(once) == once);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace printable_test
}  // namespace dtrain::cli
