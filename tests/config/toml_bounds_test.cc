// The bounds every TOML text keeps before toml++ sees it (config/toml_bounds.h): keys and headers
// of 40,000 parts, which overflowed the parser's stack, are refused at their place; texts within
// the bounds, however they use strings, comments, arrays and inline tables, pass untouched.
#include "config/toml_bounds.h"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <string>

#include "config/diagnostic_checks.h"
#include "config/job_file.h"
#include "core/codec/file_bytes.h"

namespace dtrain::config {
namespace toml_bounds_test {

std::string Repeat(const std::string& piece, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += piece;
  return out;
}

// A valid job: what the attacks below are appended to.
constexpr const char* kJob = "[data]\nformat = \"synthetic\"\n[model]\ntype = \"softmax\"\n";

BOOST_AUTO_TEST_SUITE(toml_bounds)

BOOST_AUTO_TEST_CASE(a_dotted_key_of_40000_parts_is_refused_at_its_place_by_the_job_loader) {
  const std::string text = std::string(kJob) + Repeat("x.", 40000) + "y = 1\n";
  const LoadResult r = ParseJobText(text, "d.toml", {}, "/");
  testing::CheckDiagnostics(r, {{"d.toml", 5, 64, "", "a dotted key has more than 32 parts"}});
}

BOOST_AUTO_TEST_CASE(a_table_header_of_40000_parts_is_refused) {
  const std::string text = std::string(kJob) + "[" + Repeat("t.", 40000) + "t]\n";
  const std::optional<TomlBoundsError> e = CheckTomlBounds(text);
  BOOST_REQUIRE(e.has_value());
  BOOST_TEST(e->line == 5);
  BOOST_TEST(e->description.find("a table header has more than 32 parts") != std::string::npos);
  // [[array.of.tables]] too.
  BOOST_TEST(CheckTomlBounds("[[" + Repeat("t.", 40) + "t]]\n").has_value());
}

BOOST_AUTO_TEST_CASE(deep_arrays_and_inline_tables_are_refused) {
  BOOST_TEST(CheckTomlBounds("a = " + Repeat("[", 33) + Repeat("]", 33) + "\n").has_value());
  BOOST_TEST(CheckTomlBounds("a = " + Repeat("{b = ", 33) + "1" + Repeat("}", 33) + "\n")
                 .has_value());
  // A dotted key inside an inline table counts as a key.
  BOOST_TEST(CheckTomlBounds("a = {" + Repeat("b.", 40) + "c = 1}\n").has_value());
  BOOST_TEST(!CheckTomlBounds("a = " + Repeat("[", 32) + Repeat("]", 32) + "\n").has_value());
}

BOOST_AUTO_TEST_CASE(a_text_over_one_mebibyte_is_refused_whole) {
  const std::string text = std::string(kJob) + "# " + std::string(kMaxTomlBytes, 'x') + "\n";
  const LoadResult r = ParseJobText(text, "big.toml", {}, "/");
  testing::CheckDiagnostics(r, {{"big.toml", 0, 0, "", "more than the 1048576 (1 MiB)"}});
}

BOOST_AUTO_TEST_CASE(dots_in_strings_comments_and_values_are_not_key_parts) {
  const std::string dots = Repeat(".", 100);
  const std::string text = "name = \"" + dots + "\"\n"               // a basic string
                           "path = '" + dots + "'\n"                 // a literal string
                           "doc = \"\"\"\n" + dots + "\n\"\"\"\n"    // multi-line, across lines
                           "lit = '''" + dots + "''''\n"             // ends with one more quote
                           "esc = \"\\\"" + dots + "\"\n"            // an escaped quote
                           "# " + dots + "\n"                        // a comment
                           "\"" + dots + "\" = 1\n"                  // a quoted key is one part
                           "floats = [" + Repeat("0.5, ", 200) + "1.5]\n"
                           "when = 1979-05-27T07:32:00.999999Z\n"
                           "inline = {a.b = 1.5, c = [1.5, {d.e = 2.5}], f = {}}\n"
                           "[" + Repeat("s.", 31) + "s]\n"           // 32 parts: allowed
                           + Repeat("k.", 31) + "k = 0.25\n";
  const std::optional<TomlBoundsError> e = CheckTomlBounds(text);
  BOOST_TEST(!e.has_value(), (e ? e->description : ""));
}

BOOST_AUTO_TEST_CASE(every_shipped_toml_file_passes) {
  // The examples, the test jobs and daemon configurations, and the packaged dtraind.toml.
  const std::filesystem::path data = testing::TestData();
  const std::filesystem::path source = data.parent_path().parent_path();
  int files = 0;
  for (const std::filesystem::path& dir :
       {source / "examples", source / "packaging", data / "jobs", data / "daemon"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
      if (entry.path().extension() != ".toml") continue;
      ++files;
      const std::optional<TomlBoundsError> e =
          CheckTomlBounds(codec::ReadFileBytes(entry.path().string()).value());
      BOOST_TEST(!e.has_value(), entry.path() << ": " << (e ? e->description : ""));
    }
  }
  BOOST_TEST(files > 20);
}

BOOST_AUTO_TEST_CASE(a_set_override_with_a_deep_key_is_refused_not_parsed) {
  const LoadResult r = ParseJobText(kJob, "j.toml", {Repeat("a.", 40000) + "b=1"}, "/");
  BOOST_TEST(!r.ok());
  BOOST_REQUIRE(!r.diagnostics.empty());
  BOOST_TEST(r.diagnostics.front().message.find("more than 32 parts") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace toml_bounds_test
}  // namespace dtrain::config
