// The least memory a job needs, memory_limit's sizes, and the job file's memory checks: a model
// that cannot fit [train] memory_limit or the host is refused with the figures and the place.
#include "config/job_memory.h"

#include <algorithm>

#include <boost/test/unit_test.hpp>
#include <string>

#include "config/diagnostic_checks.h"
#include "config/job_file.h"
#include "core/model/model.h"
#include "core/model/partition_plan.h"
#include "core/optim/optimizer.h"

namespace dtrain::config {
namespace job_memory_test {

using testing::CheckDiagnostics;

LoadResult Parse(const std::string& text, JobChecks checks = {}) {
  return ParseJobText(text, "inline.toml", {}, "/", checks);
}

JobConfig MustParse(const std::string& text) {
  LoadResult r = Parse(text);
  for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(r.ok());
  return *r.job;
}

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

BOOST_AUTO_TEST_SUITE(job_memory)

BOOST_AUTO_TEST_CASE(sizes_parse_with_binary_units_and_print_back) {
  BOOST_TEST(ParseBytes("4GiB").value() == 4 * kGiB);
  BOOST_TEST(ParseBytes("4G").value() == 4 * kGiB);
  BOOST_TEST(ParseBytes("512 MiB").value() == 512 * kMiB);
  BOOST_TEST(ParseBytes("1.5G").value() == 3 * kGiB / 2);
  BOOST_TEST(ParseBytes("2T").value() == 2048 * kGiB);
  BOOST_TEST(ParseBytes("1048576").value() == kMiB);
  BOOST_TEST(ParseBytes("64K").value() == 65536u);
  for (const char* bad : {"", "GiB", "4 gigs", "-1G", "4GB", "1e30T", "nanG"}) {
    BOOST_TEST(!ParseBytes(bad).ok(), bad);
  }
  BOOST_TEST(FormatBytes(512 * kMiB) == "512 MiB");
  BOOST_TEST(FormatBytes(3 * kGiB / 2) == "1.5 GiB");
  BOOST_TEST(FormatBytes(900) == "900 B");
  BOOST_TEST(FormatBytes(UINT64_MAX) == "more than 16 EiB");
}

BOOST_AUTO_TEST_CASE(the_estimate_counts_the_models_parameters_and_optimizer_state) {
  const std::string text =
      "[data]\nformat = \"synthetic\"\nfeatures = 784\nclasses = 10\n[model]\ntype = \"mlp\"\n"
      "hidden = [256, 128]\ninputs = 784\noutputs = 10\n[train]\nbatch_size = 1\n"
      "[optimizer]\ntype = \"adam\"\n";
  const JobConfig job = MustParse(text);
  model::ModelSpec spec = job.model;
  const std::uint64_t params = model::Model(spec).NumParams();
  const JobMemory m = EstimateJobMemory(job);
  BOOST_TEST(m.params == params);
  // Parameters, gradient and adam's two vectors; a checkpoint's encoding of the parameters and
  // state; and one row's activations.
  BOOST_TEST(m.replica >= params * 4 * (4 + 3));
  BOOST_TEST(m.replica < params * 4 * (4 + 3) + 16 * 1024);
  BOOST_TEST(m.shard == 0u);
  BOOST_TEST(m.breakdown.find("adam's 2 state vectors") != std::string::npos, m.breakdown);
  // With parameter servers a replica encodes the shards' snapshot, which it holds meanwhile.
  const JobMemory ps =
      EstimateJobMemory(MustParse(text + "[cluster]\nworkers = 2\nmode = \"async\"\n"));
  BOOST_TEST(ps.replica == m.replica + params * 4 * 3);
  BOOST_TEST(optim::StateVectorCount(optim::OptimizerType::kSgd) == 0);
}

BOOST_AUTO_TEST_CASE(a_partition_needs_only_the_largest_partitions_share) {
  const std::string base =
      "[data]\nformat = \"synthetic\"\nfeatures = 784\nclasses = 10\n[model]\n"
      "type = \"mlp\"\nhidden = [512, 512]\ninputs = 784\noutputs = 10\n[train]\n"
      "batch_size = 1\n[optimizer]\ntype = \"adam\"\n";
  const JobMemory one = EstimateJobMemory(MustParse(base));
  for (const char* kind : {"tensor", "layers"}) {
    const JobConfig job = MustParse(base + "[cluster]\nmodel_parallel = 3\npartition = \"" +
                                    kind + "\"\n");
    const model::PartitionPlan plan =
        model::PlanPartitions(job.model, job.cluster.partition, 3).value();
    std::uint64_t largest = 0;
    for (int p = 0; p < 3; ++p) largest = std::max<std::uint64_t>(largest, plan.Size(p));
    const JobMemory m = EstimateJobMemory(job);
    BOOST_TEST_CONTEXT(kind) {
      BOOST_TEST(m.params == one.params);
      BOOST_TEST(m.replica >= largest * 4 * (4 + 3));
      BOOST_TEST(m.replica < largest * 4 * (4 + 3) + 16 * 1024);
      BOOST_TEST(m.breakdown.find("its partition's share of " + std::to_string(one.params)) !=
                     std::string::npos,
                 m.breakdown);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_packed_job_counts_every_process_on_its_host) {
  const std::string base = "[data]\nformat = \"synthetic\"\n[model]\ntype = \"mlp\"\nhidden = [512]\n";
  const JobMemory one = EstimateJobMemory(MustParse(base));
  const JobMemory four = EstimateJobMemory(
      MustParse(base + "[cluster]\nworkers = 4\nmode = \"async\"\nservers = 2\n"));
  BOOST_TEST(four.shard > 0u);
  BOOST_TEST(four.host == 4 * four.replica + 2 * four.shard);
  const JobMemory spread = EstimateJobMemory(
      MustParse(base + "[cluster]\nworkers = 4\nmode = \"sync\"\nplacement = \"spread\"\n"));
  BOOST_TEST(spread.host == spread.replica);
  BOOST_TEST(one.host == one.replica);
}

// An elastic job's shard on several servers keeps a second copy of its slice and adam's two state
// vectors (from before its last step, to undo it): 7 slices where the static job's has 4.
BOOST_AUTO_TEST_CASE(an_elastic_jobs_shard_on_several_servers_counts_its_undo_copy) {
  const std::string base =
      "[data]\nformat = \"synthetic\"\n[model]\ntype = \"mlp\"\nhidden = [512]\n"
      "[optimizer]\ntype = \"adam\"\n[cluster]\nworkers = 3\nmode = \"sync\"\nallreduce = \"ps\"\n";
  const JobMemory fixed = EstimateJobMemory(MustParse(base + "servers = 2\n"));
  const JobMemory elastic = EstimateJobMemory(MustParse(base + "servers = 2\nmin_workers = 2\n"));
  BOOST_TEST(fixed.shard > 0u);
  BOOST_TEST(4 * elastic.shard == 7 * fixed.shard);
}

BOOST_AUTO_TEST_CASE(memory_limit_is_read_in_bytes_or_with_a_unit) {
  const std::string base = "[data]\nformat = \"synthetic\"\n[train]\n";
  BOOST_TEST(MustParse(base).memory_limit == 0u);
  BOOST_TEST(MustParse(base + "memory_limit = \"2GiB\"\n").memory_limit == 2 * kGiB);
  BOOST_TEST(MustParse(base + "memory_limit = 1073741824\n").memory_limit == kGiB);
  BOOST_TEST(MustParse(base + "memory_limit = 0\n").memory_limit == 0u);
  CheckDiagnostics(Parse(base + "memory_limit = \"lots\"\n"),
                   {{"inline.toml", 4, 16, "train.memory_limit",
                     "must be a size such as \"4GiB\", \"512 MiB\" or a number of bytes, got \"lots\""}});
  CheckDiagnostics(Parse(base + "memory_limit = \"100MiB\"\n"),
                   {{"inline.toml", 4, 16, "train.memory_limit",
                     "must be 0 (no limit) or at least 512 MiB, got 100 MiB"}});
  CheckDiagnostics(Parse(base + "memory_limit = -5\n"),
                   {{"inline.toml", 4, 16, "train.memory_limit", "got the integer -5"}});
  // It survives the resolved form.
  const JobConfig limited = MustParse(base + "memory_limit = \"3G\"\n");
  const LoadResult back = Parse(FormatResolvedJob(limited));
  BOOST_REQUIRE(back.ok());
  BOOST_TEST(back.job->memory_limit == 3 * kGiB);
}

BOOST_AUTO_TEST_CASE(a_model_over_memory_limit_is_refused_with_both_figures) {
  CheckDiagnostics(
      Parse("[data]\nformat = \"synthetic\"\n[model]\ntype = \"mlp\"\nhidden = [4096, 4096]\n"
            "[train]\nmemory_limit = \"512MiB\"\n[optimizer]\ntype = \"adam\"\n"),
      {{"inline.toml", 7, 16, "train.memory_limit",
        "is 512 MiB, but each process needs at least 836.5 MiB: 256.3 MiB for 16797697 parameters "
        "(the parameters, their gradient, adam's 2 state vectors), 192.2 MiB to take a checkpoint "
        "of them and 4.0 MiB of activations, and 384 MiB for its program and BLAS buffers"}});
}

BOOST_AUTO_TEST_CASE(a_model_larger_than_the_host_is_refused_at_its_hidden_layers) {
  const std::string huge = "[data]\nformat = \"synthetic\"\n[model]\ntype = \"mlp\"\n"
                           "hidden = [1000000, 1000000]\n[train]\nepochs = 1\n";
  BOOST_TEST(Parse(huge).ok());  // without a host to compare with
  CheckDiagnostics(Parse(huge, {DataFiles::kCheck, 24 * kGiB}),
                   {{"inline.toml", 5, 10, "model.hidden",
                     "the model needs at least 10.9 TiB per replica (7.3 TiB for 1000005000001 "
                     "parameters (the parameters, their gradient), 3.6 TiB to take a checkpoint "
                     "of them and 976.6 MiB of activations), more than this host's memory "
                     "(24 GiB)"}});
  // Four packed replicas of a model that fits once do not fit together.
  const std::string four = "[data]\nformat = \"synthetic\"\n[model]\ntype = \"mlp\"\n"
                           "hidden = [16384, 16384]\n[cluster]\nworkers = 4\nmode = \"sync\"\n";
  const JobMemory m = EstimateJobMemory(MustParse(four));
  BOOST_TEST(Parse(four, {DataFiles::kCheck, m.replica * 2}).diagnostics.size() == 1u);
  BOOST_TEST(Parse(four, {DataFiles::kCheck, m.replica * 4}).ok());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace job_memory_test
}  // namespace dtrain::config
