// A sparse job's keys: data.sparse and hash_bits, a sparse [model] (logistic, softmax, fm with
// factors), resolved and written back, and every key a sparse model cannot honour refused at its
// place with the reason (diagnostics come in file order).
#include <boost/test/unit_test.hpp>
#include <string>
#include <string_view>

#include "config/diagnostic_checks.h"
#include "config/job_file.h"

namespace dtrain::config {
namespace sparse_job_test {

using testing::CheckDiagnostics;
using testing::TestData;

constexpr std::string_view kSparseData =
    "[data]\nformat = \"libsvm\"\nsparse = true\ntrain = \"files/a1a.libsvm\"\n";

LoadResult Parse(const std::string& text) {
  return ParseJobText(text, "inline.toml", {}, (TestData() / "jobs").string());
}

BOOST_AUTO_TEST_SUITE(sparse_job)

BOOST_AUTO_TEST_CASE(a_factorization_machine_job_resolves_and_round_trips) {
  const LoadResult r = Parse(std::string(kSparseData) +
                             "hash_bits = 20\n[model]\ntype = \"fm\"\nfactors = 6\n"
                             "[optimizer]\ntype = \"ftrl\"\nl1 = 0.5\n");
  for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(r.ok());
  const JobConfig& job = *r.job;
  BOOST_TEST(job.data.sparse);
  BOOST_TEST(job.data.hash_bits == 20);
  BOOST_TEST(job.data.features == 0);  // not required: the data's largest index
  BOOST_TEST((job.sparse_model.type == sparse::SparseModelType::kFm));
  BOOST_TEST(job.sparse_model.factors == 6);
  const LoadResult back = ParseJobText(FormatResolvedJob(job), "inline.toml", {}, "/");
  for (const Diagnostic& d : back.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(back.ok());
  BOOST_TEST((*back.job == job));
}

BOOST_AUTO_TEST_CASE(a_sparse_job_defaults_to_logistic_and_takes_features_beyond_dense_limits) {
  const LoadResult r = Parse(std::string(kSparseData) + "features = 4000000000\n");
  BOOST_REQUIRE(r.ok());
  BOOST_TEST((r.job->sparse_model.type == sparse::SparseModelType::kLogistic));
  BOOST_TEST(r.job->data.features == 4'000'000'000);
}

BOOST_AUTO_TEST_CASE(sparse_keys_without_sparse_data_are_refused_where_written) {
  CheckDiagnostics(Parse("[data]\nformat = \"libsvm\"\nfeatures = 5\ntrain = \"files/a1a.libsvm\"\n"
                         "hash_bits = 12\n[model]\ntype = \"fm\"\n"),
                   {{"inline.toml", 5, 13, "data.hash_bits", "needs data.sparse = true"},
                    {"inline.toml", 7, 8, "model.type", "\"fm\" is a sparse model: it needs"}});
  CheckDiagnostics(
      Parse("[data]\nformat = \"csv\"\nsparse = true\ntrain = \"files/iris.csv\"\n"),
      {{"inline.toml", 3, 10, "data.sparse", "needs data.format = \"libsvm\", got \"csv\""}});
}

BOOST_AUTO_TEST_CASE(what_a_sparse_model_cannot_honour_is_refused_with_the_reason) {
  CheckDiagnostics(
      Parse(std::string(kSparseData) +
            "scale = 2.0\n[model]\ntype = \"logistic\"\nfactors = 4\nhidden = [8]\n"
            "[train]\nweight_decay = 0.01\nclip_norm = 1.0\n"
            "[optimizer]\ntype = \"adam\"\n[cluster]\nmode = \"local\"\nworkers = 2\n"),
      {{"inline.toml", 5, 9, "data.scale", "sparse rows are used as they are"},
       {"inline.toml", 8, 11, "model.factors", "is only used by type \"fm\""},
       {"inline.toml", 9, 10, "model.hidden", "is not used by a sparse model"},
       {"inline.toml", 11, 16, "train.weight_decay", "regularise with optimizer.type = \"ftrl\""},
       {"inline.toml", 12, 13, "train.clip_norm", "global norm"},
       {"inline.toml", 14, 8, "optimizer.type", "\"sgd\", \"adagrad\" or \"ftrl\""},
       {"inline.toml", 16, 8, "cluster.mode", "is \"local\", but a sparse model"}});
}

BOOST_AUTO_TEST_CASE(sync_needs_parameter_servers_and_async_takes_a_staleness_bound) {
  CheckDiagnostics(Parse(std::string(kSparseData) + "[cluster]\nmode = \"sync\"\nworkers = 2\n"),
                   {{"inline.toml", 6, 8, "cluster.mode", "it needs cluster.allreduce = \"ps\""}});
  CheckDiagnostics(
      Parse(std::string(kSparseData) +
            "[cluster]\nmode = \"sync\"\nallreduce = \"ring\"\nworkers = 2\n"),
      {{"inline.toml", 7, 13, "cluster.allreduce", "is \"ring\", but a sparse model trains"}});
  const LoadResult sync = Parse(std::string(kSparseData) +
                                "[cluster]\nmode = \"sync\"\nallreduce = \"ps\"\nworkers = 2\n");
  for (const Diagnostic& d : sync.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_TEST(sync.ok());
  const LoadResult async = Parse(std::string(kSparseData) +
                                 "[cluster]\nmode = \"async\"\nworkers = 2\nmax_staleness = 2\n");
  for (const Diagnostic& d : async.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(async.ok());
  BOOST_TEST(async.job->cluster.max_staleness == 2);
}

BOOST_AUTO_TEST_CASE(a_streamed_training_file_resolves_and_what_it_cannot_do_is_refused) {
  const LoadResult r = Parse(std::string(kSparseData) + "stream = true\nstream_block_mib = 0.5\n");
  for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(r.ok());
  BOOST_TEST(r.job->data.stream);
  BOOST_TEST(r.job->data.stream_block_mib == 0.5);
  const LoadResult back = ParseJobText(FormatResolvedJob(*r.job), "inline.toml", {}, "/");
  BOOST_REQUIRE(back.ok());
  BOOST_TEST((*back.job == *r.job));
  CheckDiagnostics(Parse("[data]\nformat = \"libsvm\"\nfeatures = 5\ntrain = \"files/a1a.libsvm\"\n"
                         "stream = true\n"),
                   {{"inline.toml", 5, 10, "data.stream", "needs data.sparse = true"}});
  CheckDiagnostics(
      Parse(std::string(kSparseData) + "stream = true\nvalidation_fraction = 0.1\n"),
      {{"inline.toml", 6, 23, "data.validation_fraction", "name a data.test file instead"}});
  CheckDiagnostics(Parse(std::string(kSparseData) + "stream_block_mib = 0\n"),
                   {{"inline.toml", 5, 20, "data.stream_block_mib", "must be a number in"}});
}

// A sparse model pushes keys and their rows: gradient compression does not apply.
BOOST_AUTO_TEST_CASE(a_sparse_model_refuses_gradient_compression) {
  CheckDiagnostics(Parse(std::string(kSparseData) +
                         "[cluster]\nworkers = 2\nmode = \"async\"\ncompression = \"topk\"\n"),
                   {{"inline.toml", 8, 15, "cluster.compression",
                     "is \"topk\", but a sparse model pushes its batch's keys and their rows, "
                     "which compression does not apply to"}});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace sparse_job_test
}  // namespace dtrain::config
