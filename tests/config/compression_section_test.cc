// Gradient compression in a job file ([cluster] compression and its keys): the defaults, each
// method read and written back, and each refusal at its place with the reason — a value out of
// range, a key the method does not read, a method where the job's gradients are not all-reduced
// by whole replicas on the ring.
#include <boost/test/unit_test.hpp>
#include <string>

#include "config/diagnostic_checks.h"
#include "config/job_file.h"
#include "config/resume_settings.h"

namespace dtrain::config {
namespace compression_section_test {

using testing::CheckDiagnostics;

constexpr const char* kData = "[data]\nformat = \"synthetic\"\n";
constexpr const char* kSync = "[cluster]\nworkers = 2\nmode = \"sync\"\n";

LoadResult Parse(const std::string& text) { return ParseJobText(text, "inline.toml", {}, "/"); }

JobConfig MustParse(const std::string& text) {
  const LoadResult r = Parse(text);
  for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(r.ok());
  return *r.job;
}

bool Has(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

BOOST_AUTO_TEST_SUITE(compression_section)

BOOST_AUTO_TEST_CASE(a_job_without_the_keys_compresses_nothing_and_has_the_defaults) {
  const compress::Settings s = MustParse(std::string(kData) + kSync).cluster.compression;
  BOOST_TEST((s.method == compress::Method::kNone));
  BOOST_TEST(s.rank == 4);
  BOOST_TEST(s.fraction == 0.001);
  BOOST_TEST(s.warmup_steps == 0);
}

BOOST_AUTO_TEST_CASE(each_method_is_read_and_round_trips_with_only_its_own_keys) {
  const struct {
    std::string keys;
    compress::Settings expected;
    std::vector<std::string> written, not_written;
  } cases[] = {
      {"compression = \"powersgd\"\ncompression_rank = 8\ncompression_warmup_steps = 100\n",
       {.method = compress::Method::kPowerSgd, .rank = 8, .warmup_steps = 100},
       {"compression = \"powersgd\"", "compression_rank = 8", "compression_warmup_steps = 100"},
       {"compression_fraction"}},
      {"compression = \"topk\"\ncompression_fraction = 0.01\n",
       {.method = compress::Method::kTopK, .fraction = 0.01},
       {"compression = \"topk\"", "compression_fraction = 0.01", "compression_warmup_steps = 0"},
       {"compression_rank"}},
      {"compression = \"bf16\"\n",
       {.method = compress::Method::kBf16},
       {"compression = \"bf16\"", "compression_warmup_steps = 0"},
       {"compression_rank", "compression_fraction"}},
      {"compression = \"none\"\n",
       {},
       {"compression = \"none\""},
       {"compression_rank", "compression_fraction", "compression_warmup_steps"}},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.keys) {
      const JobConfig job = MustParse(std::string(kData) + kSync + c.keys);
      BOOST_TEST((job.cluster.compression == c.expected));
      for (const ResolvedKeys keys : {ResolvedKeys::kAll, ResolvedKeys::kApplicable}) {
        const std::string text = FormatResolvedJob(job, keys);
        for (const std::string& line : c.written) BOOST_TEST(Has(text, line), line);
        for (const std::string& key : c.not_written) {
          BOOST_TEST(text.find(key) == std::string::npos, key);
        }
        const LoadResult back = ParseJobText(text, "inline.toml", {}, "/");
        for (const Diagnostic& d : back.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
        BOOST_REQUIRE(back.ok());
        BOOST_TEST((back.job->cluster == job.cluster));
      }
    }
  }
}

// The key applies to the modes that exchange gradients or averages, by whole replicas: people see
// it there, a program's full text everywhere.
BOOST_AUTO_TEST_CASE(the_applicable_keys_show_compression_only_where_it_applies) {
  const JobConfig single = MustParse(kData);
  BOOST_TEST(FormatResolvedJob(single, ResolvedKeys::kApplicable).find("compression") ==
             std::string::npos);
  BOOST_TEST(Has(FormatResolvedJob(single), "compression = \"none\""));
  const JobConfig sandblaster =
      MustParse(std::string(kData) +
                "[optimizer]\ntype = \"lbfgs\"\n[cluster]\nworkers = 2\nmode = \"sandblaster\"\n");
  BOOST_TEST(FormatResolvedJob(sandblaster, ResolvedKeys::kApplicable).find("compression") ==
             std::string::npos);
  for (const std::string& cluster :
       {std::string(kSync), std::string(kSync) + "allreduce = \"ps\"\n",
        std::string("[cluster]\nworkers = 2\nmode = \"async\"\n"),
        std::string("[cluster]\nworkers = 2\nmode = \"local\"\n")}) {
    const JobConfig job = MustParse(std::string(kData) + cluster);
    BOOST_TEST(Has(FormatResolvedJob(job, ResolvedKeys::kApplicable), "compression = \"none\""),
               cluster);
  }
}

BOOST_AUTO_TEST_CASE(values_out_of_range_are_refused_with_what_is_allowed) {
  CheckDiagnostics(
      Parse(std::string(kData) + kSync +
            "compression = \"zstd\"\ncompression_rank = 0\ncompression_fraction = 0.0\n"
            "compression_warmup_steps = -1\n"),
      {{"inline.toml", 6, 15, "cluster.compression",
        "must be one of: none, bf16, powersgd, topk; got \"zstd\""},
       {"inline.toml", 7, 20, "cluster.compression_rank", "must be an integer in [1, 64], got 0"},
       {"inline.toml", 8, 24, "cluster.compression_fraction", "must be a number in [1e-06, 1]"},
       {"inline.toml", 9, 28, "cluster.compression_warmup_steps",
        "must be an integer in [0, 10000000000], got -1"}});
  CheckDiagnostics(
      Parse(std::string(kData) + kSync + "compression = \"powersgd\"\ncompression_rank = 65\n"),
      {{"inline.toml", 7, 20, "cluster.compression_rank",
        "must be an integer in [1, 64], got 65"}});
  CheckDiagnostics(
      Parse(std::string(kData) + kSync + "compression = \"topk\"\ncompression_fraction = 1.5\n"),
      {{"inline.toml", 7, 24, "cluster.compression_fraction", "got 1.5"}});
}

BOOST_AUTO_TEST_CASE(a_key_the_method_does_not_read_is_refused_naming_the_method) {
  CheckDiagnostics(
      Parse(std::string(kData) + kSync + "compression = \"topk\"\ncompression_rank = 8\n"),
      {{"inline.toml", 7, 20, "cluster.compression_rank",
        "is the rank of compression \"powersgd\"'s factors, but cluster.compression is "
        "\"topk\""}});
  CheckDiagnostics(
      Parse(std::string(kData) + kSync +
            "compression = \"powersgd\"\ncompression_fraction = 0.01\n"),
      {{"inline.toml", 7, 24, "cluster.compression_fraction",
        "is the share of each tensor that compression \"topk\" sends, but cluster.compression is "
        "\"powersgd\""}});
  CheckDiagnostics(
      Parse(std::string(kData) + kSync + "compression_warmup_steps = 10\ncompression_rank = 2\n"),
      {{"inline.toml", 6, 28, "cluster.compression_warmup_steps",
        "delays compression, but cluster.compression is \"none\""},
       {"inline.toml", 7, 20, "cluster.compression_rank", "but cluster.compression is \"none\""}});
}

BOOST_AUTO_TEST_CASE(a_method_is_refused_where_gradients_are_not_exchanged_by_whole_replicas) {
  const std::string applies =
      "is \"bf16\", but compression applies to what the replicas of mode \"sync\", \"async\" or "
      "\"local\" exchange, with model_parallel = 1 for now: ";
  const struct {
    std::string cluster;
    int line;
    std::string why;
  } cases[] = {
      {"mode = \"single\"\n", 5,
       "mode \"single\" trains one replica, with no gradients to exchange"},
      {"", 4, "mode \"single\" trains one replica"},  // the default mode
      {"workers = 2\nmode = \"local\"\nmodel_parallel = 2\n", 7,
       "model_parallel = 2 splits each replica's gradient among its partitions"},
      {"workers = 2\nmode = \"sync\"\nmodel_parallel = 2\n", 7,
       "model_parallel = 2 splits each replica's gradient among its partitions"},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.cluster) {
      CheckDiagnostics(Parse(std::string(kData) + "[model]\ntype = \"mlp\"\nhidden = [8]\n" +
                             "[cluster]\n" + c.cluster + "compression = \"bf16\"\n"),
                       {{"inline.toml", c.line + 3, 15, "cluster.compression", applies + c.why}});
    }
  }
  CheckDiagnostics(
      Parse(std::string(kData) + "[optimizer]\ntype = \"lbfgs\"\n" +
            "[cluster]\nworkers = 2\nmode = \"sandblaster\"\ncompression = \"bf16\"\n"),
      {{"inline.toml", 8, 15, "cluster.compression",
        "mode \"sandblaster\" pushes its work units' gradients to L-BFGS's shards"}});
}

// Pushes to parameter servers (async, sync with allreduce "ps") take bf16 and topk, not PowerSGD,
// whose factors only an all-reduce sums.
BOOST_AUTO_TEST_CASE(parameter_servers_take_bf16_and_topk_pushes_but_not_powersgd) {
  const std::string async = "[cluster]\nworkers = 2\nmode = \"async\"\n";
  const std::string ps = std::string(kSync) + "allreduce = \"ps\"\n";
  for (const std::string& cluster : {async, ps}) {
    for (const std::string method : {"bf16", "topk"}) {
      BOOST_TEST_CONTEXT(cluster << method) {
        const JobConfig job =
            MustParse(std::string(kData) + cluster + "compression = \"" + method + "\"\n");
        BOOST_TEST(compress::MethodName(job.cluster.compression.method) == method);
      }
    }
  }
  CheckDiagnostics(Parse(std::string(kData) + async + "compression = \"powersgd\"\n"),
                   {{"inline.toml", 6, 15, "cluster.compression",
                     "model_parallel = 1 for now: mode \"async\" pushes each worker's gradient to "
                     "parameter servers, which would have to rebuild every worker's low-rank "
                     "product: PowerSGD's factors are summed by all-reduce (\"bf16\" and \"topk\" "
                     "apply)"}});
  CheckDiagnostics(Parse(std::string(kData) + ps + "compression = \"powersgd\"\n"),
                   {{"inline.toml", 7, 15, "cluster.compression",
                     "allreduce \"ps\" pushes each worker's gradient to parameter servers"}});
}

// Mode "local" compresses what its averages exchange: each method is read, shown and round-trips.
BOOST_AUTO_TEST_CASE(local_jobs_compress_their_averages_with_every_method) {
  for (const std::string method : {"bf16", "powersgd", "topk"}) {
    BOOST_TEST_CONTEXT(method) {
      const JobConfig job =
          MustParse(std::string(kData) + "[cluster]\nworkers = 2\nmode = \"local\"\n" +
                    "average_optimizer = true\ncompression = \"" + method + "\"\n");
      BOOST_TEST(compress::MethodName(job.cluster.compression.method) == method);
      const std::string text = FormatResolvedJob(job, ResolvedKeys::kApplicable);
      BOOST_TEST(Has(text, "compression = \"" + method + "\""), text);
      const LoadResult back = ParseJobText(text, "inline.toml", {}, "/");
      BOOST_REQUIRE(back.ok());
      BOOST_TEST((back.job->cluster == job.cluster));
    }
  }
}

// One problem, one diagnostic: a value that failed to read is not held against the others.
BOOST_AUTO_TEST_CASE(nothing_is_held_against_a_key_that_failed_to_read) {
  CheckDiagnostics(
      Parse(std::string(kData) + kSync + "compression = \"zstd\"\ncompression_rank = 8\n"),
      {{"inline.toml", 6, 15, "cluster.compression", "got \"zstd\""}});
  CheckDiagnostics(Parse(std::string(kData) +
                         "[cluster]\nworkers = 2\nmode = \"synk\"\ncompression = \"bf16\"\n"),
                   {{"inline.toml", 5, 8, "cluster.mode", "got \"synk\""}});
  CheckDiagnostics(
      Parse(std::string(kData) + kSync + "allreduce = \"tree\"\ncompression = \"bf16\"\n"),
      {{"inline.toml", 6, 13, "cluster.allreduce", "got \"tree\""}});
}

// A checkpoint holds the compressor's residuals and factors: a resumed job compresses as before.
BOOST_AUTO_TEST_CASE(a_resumed_job_may_not_change_its_compression) {
  const JobConfig job = MustParse(std::string(kData) + kSync +
                                  "compression = \"powersgd\"\ncompression_warmup_steps = 5\n");
  const LoadResult r =
      ApplyResumeSettings(FormatResolvedJob(job), "job 3",
                          {"cluster.compression=none", "cluster.compression_rank=8",
                           "cluster.compression_warmup_steps=0"});
  BOOST_REQUIRE(r.diagnostics.size() == 3u);
  for (const Diagnostic& d : r.diagnostics) {
    BOOST_TEST(d.key.starts_with("cluster.compression"), d.key);
    BOOST_TEST(d.message.starts_with("cannot change when a job resumes"), d.message);
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace compression_section_test
}  // namespace dtrain::config
