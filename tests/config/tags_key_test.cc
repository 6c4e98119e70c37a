// The top-level `tags` of a job file and the tags --tag adds: read in order and written back;
// a tag that is not a label, a duplicate, too many tags or a value of another type refused at its
// place with what is allowed; and AddTags (submit/run --tag) held to the same rules.
#include "config/tags_key.h"

#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "config/diagnostic_checks.h"
#include "config/job_file.h"

namespace dtrain::config {
namespace tags_key_test {

using testing::CheckDiagnostics;
using testing::MustParseInline;
using testing::ParseInline;

constexpr const char* kData = "[data]\nformat = \"synthetic\"\n";

// `n` distinct tags as a TOML array: ["t1", "t2", ...].
std::string ManyTags(std::size_t n) {
  std::string text = "[";
  for (std::size_t i = 1; i <= n; ++i) {
    // Appended piece by piece: `"t" + std::to_string(...)` trips GCC 12's -Wrestrict.
    text += i > 1 ? ", \"t" : "\"t";
    text += std::to_string(i);
    text += '"';
  }
  return text + "]";
}

BOOST_AUTO_TEST_SUITE(tags_key)

BOOST_AUTO_TEST_CASE(none_by_default_and_read_in_order_and_written_back) {
  const JobConfig none = MustParseInline(kData);
  BOOST_TEST(none.tags.empty());
  BOOST_TEST(FormatResolvedJob(none).find("tags") == std::string::npos);

  const JobConfig job =
      MustParseInline("tags = [\"lr-sweep\", \"baseline\", \"v1.2_b\"]\n" + std::string(kData));
  const std::vector<std::string> expected{"lr-sweep", "baseline", "v1.2_b"};
  BOOST_TEST(job.tags == expected, boost::test_tools::per_element());
  const std::string text = FormatResolvedJob(job, ResolvedKeys::kApplicable);
  BOOST_TEST(text.find("\ntags = [\"lr-sweep\", \"baseline\", \"v1.2_b\"]\n") != std::string::npos);
  const JobConfig back = MustParseInline(text);
  BOOST_TEST((back == job));
  // The largest allowed: 32 tags of 64 characters each.
  const JobConfig most = MustParseInline("tags = " + ManyTags(32) + "\n" + kData);
  BOOST_TEST(most.tags.size() == 32u);
  const JobConfig longest =
      MustParseInline("tags = [\"" + std::string(64, 'x') + "\"]\n" + std::string(kData));
  BOOST_TEST(longest.tags.front().size() == 64u);
}

BOOST_AUTO_TEST_CASE(a_tag_that_is_not_a_label_is_refused_at_its_place) {
  CheckDiagnostics(ParseInline("tags = [\"ok\", \"has space\"]\n" + std::string(kData)),
                   {{"inline.toml", 1, 15, "tags",
                     "tag 2 must be 1 to 64 letters, digits, '.', '_' or '-', got \"has space\""}});
  CheckDiagnostics(ParseInline("tags = [\"\"]\n" + std::string(kData)),
                   {{"inline.toml", 1, 9, "tags", "tag 1 must be 1 to 64 letters"}});
  CheckDiagnostics(ParseInline("tags = [\"" + std::string(65, 'x') + "\"]\n" + std::string(kData)),
                   {{"inline.toml", 1, 9, "tags", "tag 1 must be 1 to 64 letters"}});
  CheckDiagnostics(ParseInline("tags = [\"a\", 3]\n" + std::string(kData)),
                   {{"inline.toml", 1, 14, "tags", "tag 2 must be a tag string"}});
  CheckDiagnostics(ParseInline("tags = \"baseline\"\n" + std::string(kData)),
                   {{"inline.toml", 1, 8, "tags", "must be an array of tag strings"}});
}

BOOST_AUTO_TEST_CASE(duplicates_and_too_many_tags_are_refused) {
  CheckDiagnostics(ParseInline("tags = [\"a\", \"b\", \"a\"]\n" + std::string(kData)),
                   {{"inline.toml", 1, 19, "tags", "tag 3 \"a\" is given twice"}});
  CheckDiagnostics(ParseInline("tags = " + ManyTags(33) + "\n" + kData),
                   {{"inline.toml", 1, 8, "tags", "must be at most 32 tags, got 33"}});
}

BOOST_AUTO_TEST_CASE(a_set_override_replaces_the_files_tags) {
  const LoadResult r = ParseJobText("tags = [\"a\"]\n" + std::string(kData), "inline.toml",
                                    {"tags=[\"b\", \"c\"]"}, "/");
  BOOST_REQUIRE(r.ok());
  const std::vector<std::string> expected{"b", "c"};
  BOOST_TEST(r.job->tags == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(tag_options_are_added_under_the_same_rules) {
  std::vector<std::string> tags{"a"};
  BOOST_TEST(AddTags(std::vector<std::string>{"b", "c"}, &tags).empty());
  const std::vector<std::string> expected{"a", "b", "c"};
  BOOST_TEST(tags == expected, boost::test_tools::per_element());

  // Each problem named; nothing added when there is one.
  const std::vector<Diagnostic> problems =
      AddTags(std::vector<std::string>{"d", "a b", "c"}, &tags);
  BOOST_REQUIRE_EQUAL(problems.size(), 2u);
  BOOST_TEST(FormatDiagnostic(problems[0]) ==
             "--tag: tags: must be 1 to 64 letters, digits, '.', '_' or '-', got \"a b\"");
  BOOST_TEST(FormatDiagnostic(problems[1]) == "--tag: tags: \"c\" is a tag of the job already");
  BOOST_TEST(tags == expected, boost::test_tools::per_element());

  std::vector<std::string> full;
  for (std::size_t i = 0; i < 32; ++i) full.push_back(std::string(i + 1, 't'));
  const std::vector<Diagnostic> over = AddTags(std::vector<std::string>{"one-more"}, &full);
  BOOST_REQUIRE_EQUAL(over.size(), 1u);
  BOOST_TEST(over[0].message == "must be at most 32 tags, got 33");
  BOOST_TEST(full.size() == 32u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace tags_key_test
}  // namespace dtrain::config
