// dtrain validate through the real binary, for a job that compresses its gradients: the plan of
// each tensor (shape, encoding, bytes a step before and after; on parameter servers of each
// shard's slice) and the totals, as TOML comments and under --json, and whether the exchange
// overlaps the backward pass; nothing of the kind for a job that compresses nothing. And what runs
// the matrix products, as DTRAIN_GEMM says.
#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "cmd/run_checks.h"
#include "common/process.h"
#include "common/temp_dir.h"

namespace dtrain::cli {
namespace validate_test {

using dtrain::testing::ProcessResult;
using dtrain::testing::RunProcess;
using dtrain::testing::TempDir;
using run_checks::Bin;
using run_checks::ParseJson;

// An MLP of 784 inputs, 256 hidden units and 10 outputs, trained by two sync replicas on the
// ring: its 784x256 weights are worth compressing at rank 4 (4 * (784 + 256) floats sent for
// 200704), its 256x10 weights are not (1064 for 2560) nor its biases.
std::string MlpJob(const std::string& compression) {
  return "[data]\nformat = \"synthetic\"\nrows = 200\ntest_rows = 20\nfeatures = 784\n"
         "classes = 10\n[model]\ntype = \"mlp\"\nhidden = [256]\n[train]\nepochs = 1\n"
         "[cluster]\nworkers = 2\nmode = \"sync\"\n" +
         compression;
}

// The line of `text` that holds `part`, or "" when none does.
std::string LineWith(const std::string& text, const std::string& part) {
  const std::size_t at = text.find(part);
  if (at == std::string::npos) return "";
  const std::size_t begin = text.rfind('\n', at) + 1;  // npos + 1 == 0: the first line
  return text.substr(begin, text.find('\n', at) - begin);
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

BOOST_AUTO_TEST_SUITE(validate)

BOOST_AUTO_TEST_CASE(validate_prints_the_plan_of_each_tensor_and_the_totals) {
  TempDir dir;
  const ProcessResult r =
      RunProcess({Bin(), "validate", dir.Write("mlp.toml", MlpJob("compression = \"powersgd\"\n"))},
                 dir.Path(""));
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(Contains(r.out, "\ncompression = \"powersgd\"\ncompression_rank = 4\n"), r.out);
  // 814120 bytes of gradient: 802816 + 1024 + 10240 + 40; sent 16640 + 1024 + 10240 + 40.
  BOOST_TEST(Contains(r.out,
                      "\n# compression \"powersgd\": each replica sends 27944 of the "
                      "gradient's 814120 bytes a step (29.1x less)\n"),
             r.out);
  const struct {
    std::string shape, encoding, bytes, sent;
  } rows[] = {{"784x256", "low rank", "802816", "16640"},
              {"1x256", "raw", "1024", "1024"},
              {"256x10", "raw", "10240", "10240"},
              {"1x10", "raw", "40", "40"}};
  for (const auto& row : rows) {
    BOOST_TEST_CONTEXT(row.shape) {
      const std::string line = LineWith(r.out, " " + row.shape + " ");
      BOOST_TEST(line.rfind("#   layer ", 0) == 0u, line);
      BOOST_TEST(Contains(line, " " + row.encoding + " "), line);
      BOOST_TEST(Contains(line, " " + row.bytes + " "), line);
      BOOST_TEST(line.ends_with(" " + row.sent), line);
    }
  }
  BOOST_TEST(Contains(LineWith(r.out, " 784x256 "), "weights"));
  BOOST_TEST(Contains(LineWith(r.out, " 1x256 "), "biases"));
}

BOOST_AUTO_TEST_CASE(validate_names_what_runs_the_matrix_products) {
  TempDir dir;
  const std::string job = dir.Write("mlp.toml", MlpJob(""));
  const auto validate = [&](const std::string& gemm) {
    const ProcessResult r = RunProcess({"/usr/bin/env", "DTRAIN_GEMM=" + gemm,
                                        "OPENBLAS_CORETYPE=Haswell", Bin(), "validate", job},
                                       dir.Path(""));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    return r.out;
  };
  const std::string openblas = validate("openblas");
  BOOST_TEST(
      Contains(openblas, "\n# matrix products: OpenBLAS, Haswell kernels (DTRAIN_GEMM=openblas)\n"),
      openblas);
  const std::string onednn = validate("onednn");
  BOOST_TEST(Contains(onednn, "\n# matrix products: oneDNN's sgemm (DTRAIN_GEMM=onednn)\n"),
             onednn);
}

BOOST_AUTO_TEST_CASE(validate_json_gives_the_plan_as_a_field) {
  TempDir dir;
  const ProcessResult r = RunProcess(
      {Bin(), "validate", "--json", dir.Write("mlp.toml", MlpJob("compression = \"powersgd\"\n"))},
      dir.Path(""));
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const nlohmann::json out = ParseJson(r);
  BOOST_TEST(Contains(out["resolved"].get<std::string>(), "\ncompression = \"powersgd\"\n"));
  const nlohmann::json& plan = out["compression"];
  BOOST_TEST(plan["method"] == "powersgd");
  BOOST_TEST(plan["bytes"] == 814120);
  BOOST_TEST(plan["sent_bytes"] == 27944);
  BOOST_TEST(plan["ratio"].get<double>() == 814120.0 / 27944.0);
  BOOST_REQUIRE(plan["tensors"].size() == 4u);
  const nlohmann::json& weights = plan["tensors"][0];
  BOOST_TEST(Contains(weights["name"].get<std::string>(), "weights"));
  BOOST_TEST(weights["rows"] == 784);
  BOOST_TEST(weights["cols"] == 256);
  BOOST_TEST(weights["encoding"] == "low rank");
  BOOST_TEST(weights["bytes"] == 802816);
  BOOST_TEST(weights["sent_bytes"] == 16640);
  const nlohmann::json& biases = plan["tensors"][1];
  BOOST_TEST(biases["rows"] == 1);
  BOOST_TEST(biases["cols"] == 256);
  BOOST_TEST(biases["encoding"] == "raw");
  BOOST_TEST(biases["sent_bytes"] == biases["bytes"]);
}

// bucket_bytes below the last layers' 2570 floats cuts two buckets, each compressed on its own
// during the backward pass; the default 4 MiB holds the whole gradient, exchanged after it.
BOOST_AUTO_TEST_CASE(validate_says_when_the_compressed_exchange_overlaps_the_backward_pass) {
  TempDir dir;
  const std::string overlapped = dir.Write(
      "overlapped.toml", MlpJob("compression = \"powersgd\"\nbucket_bytes = \"8 KiB\"\n"));
  const ProcessResult text = RunProcess({Bin(), "validate", overlapped}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(text.exit_code == 0, text.err);
  BOOST_TEST(Contains(text.out,
                      "\n# overlapped: gradients compressed and exchanged in 2 buckets during the "
                      "backward pass (bucket_bytes = 8192)\n"),
             text.out);
  const ProcessResult json = RunProcess({Bin(), "validate", "--json", overlapped}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(json.exit_code == 0, json.err);
  BOOST_TEST(ParseJson(json)["compression"]["overlap_buckets"] == 2);

  const std::string whole = dir.Write("whole.toml", MlpJob("compression = \"powersgd\"\n"));
  const ProcessResult after = RunProcess({Bin(), "validate", whole}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(after.exit_code == 0, after.err);
  BOOST_TEST(!Contains(after.out, "# overlapped"), after.out);
  const ProcessResult after_json = RunProcess({Bin(), "validate", "--json", whole}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(after_json.exit_code == 0, after_json.err);
  BOOST_TEST(ParseJson(after_json)["compression"]["overlap_buckets"] == 0);
}

// On parameter servers a push's slice for each shard travels: 203530 floats in two slices of
// 101765, each sending k = ceil(0.01 * 101765) = 1018 pairs.
BOOST_AUTO_TEST_CASE(a_parameter_server_job_shows_the_plan_of_each_shards_slice) {
  TempDir dir;
  const ProcessResult r = RunProcess(
      {Bin(), "validate", "--json",
       dir.Write("ps.toml", MlpJob("allreduce = \"ps\"\nservers = 2\ncompression = \"topk\"\n"
                                   "compression_fraction = 0.01\n"))},
      dir.Path(""));
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const nlohmann::json out = ParseJson(r);
  const nlohmann::json& plan = out["compression"];
  BOOST_TEST(plan["bytes"] == 814120);
  BOOST_TEST(plan["sent_bytes"] == 2 * 8144);
  BOOST_REQUIRE(plan["tensors"].size() == 2u);
  const nlohmann::json& second = plan["tensors"][1];
  BOOST_TEST(second["name"] == "shard 1 of 2 [101765, 203530)");
  BOOST_TEST(second["rows"] == 1);
  BOOST_TEST(second["cols"] == 101765);
  BOOST_TEST(second["encoding"] == "sparse");
  BOOST_TEST(second["sent_bytes"] == 8144);
}

BOOST_AUTO_TEST_CASE(a_job_that_compresses_nothing_shows_no_plan) {
  TempDir dir;
  const std::string job = dir.Write("mlp.toml", MlpJob(""));
  const ProcessResult text = RunProcess({Bin(), "validate", job}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(text.exit_code == 0, text.err);
  BOOST_TEST(Contains(text.out, "\ncompression = \"none\"\n"), text.out);
  BOOST_TEST(!Contains(text.out, "# compression"), text.out);
  const ProcessResult json = RunProcess({Bin(), "validate", "--json", job}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(json.exit_code == 0, json.err);
  BOOST_TEST(ParseJson(json)["compression"].is_null());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace validate_test
}  // namespace dtrain::cli
