// train.precision in a job file: "fp32" by default and written back; "bf16" read where this CPU
// multiplies bf16 natively, and refused at its place, naming what the CPU lacks, where it does
// not (ctest runs this suite again with oneDNN capped at AVX2, so the refusal is checked on every
// CPU) — when the job is checked for this host, as dtrain run, validate and the daemon check it,
// not as dtrain submit does; any other value refused with the choices.
#include <boost/test/unit_test.hpp>
#include <string>

#include "common/native_bf16.h"
#include "config/diagnostic_checks.h"
#include "config/job_file.h"

namespace dtrain::config {
namespace precision_key_test {

using testing::CheckDiagnostics;
using testing::MustParseInline;
using testing::NativeBf16Here;
using testing::NoNativeBf16Here;
using testing::ParseInline;

constexpr const char* kJob = "[data]\nformat = \"synthetic\"\n[train]\n";

// `text` checked for this host's CPU, as dtrain run, validate and the daemon check a job.
LoadResult ParseHere(const std::string& text) {
  return ParseJobText(text, "inline.toml", {}, "/", {.host_cpu = true});
}

BOOST_AUTO_TEST_SUITE(precision_key)

BOOST_AUTO_TEST_CASE(fp32_by_default_and_written_back) {
  const JobConfig job = MustParseInline(kJob);
  BOOST_TEST((job.precision == math::Precision::kFp32));
  const std::string text = FormatResolvedJob(job, ResolvedKeys::kApplicable);
  BOOST_TEST(text.find("\nprecision = \"fp32\"\n") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(bf16_is_read_and_round_trips_where_the_cpu_has_it,
                     *boost::unit_test::precondition(NativeBf16Here)) {
  const LoadResult here = ParseHere(std::string(kJob) + "precision = \"bf16\"\n");
  BOOST_REQUIRE(here.ok());
  const JobConfig& job = *here.job;
  BOOST_TEST((job.precision == math::Precision::kBf16));
  const LoadResult back = ParseHere(FormatResolvedJob(job, ResolvedKeys::kAll));
  BOOST_REQUIRE(back.ok());
  BOOST_TEST((back.job->precision == math::Precision::kBf16));
  BOOST_TEST((*back.job == job));
}

BOOST_AUTO_TEST_CASE(bf16_is_refused_at_its_line_naming_what_the_cpu_lacks,
                     *boost::unit_test::precondition(NoNativeBf16Here)) {
  const std::string why = math::NativeBf16().how;
  CheckDiagnostics(ParseHere(std::string(kJob) + "precision = \"bf16\"\n"),
                   {{"inline.toml", 4, 13, "train.precision", "AVX512_BF16 or AMX-BF16"}});
  CheckDiagnostics(ParseHere(std::string(kJob) + "precision = \"bf16\"\n"),
                   {{"inline.toml", 4, 13, "train.precision", why}});
}

// dtrain submit leaves the host's CPU to the daemon, which may run the job on another host.
BOOST_AUTO_TEST_CASE(bf16_is_read_anywhere_where_the_job_is_not_checked_for_this_host) {
  const JobConfig job = MustParseInline(std::string(kJob) + "precision = \"bf16\"\n");
  BOOST_TEST((job.precision == math::Precision::kBf16));
}

BOOST_AUTO_TEST_CASE(an_unknown_value_is_refused_with_the_choices) {
  CheckDiagnostics(
      ParseInline(std::string(kJob) + "precision = \"fp16\"\n"),
      {{"inline.toml", 4, 13, "train.precision", "must be one of: fp32, bf16; got \"fp16\""}});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace precision_key_test
}  // namespace dtrain::config
