// Jobs with train.precision = "bf16" as real processes through `dtrain run`: a small CNN (so that
// oneDNN's bf16 convolutions take part beside the dense layers' bf16 matrix products) on two sync
// replicas trains as the same job in fp32 does, to a loss near fp32's, without fp32's bits; each
// replica says so in the job's log; both replicas stay identical; and an interrupted and resumed
// bf16 run ends with the bits of a straight one. Where the CPU has no native bf16 these skip
// saying why, and the job file is refused at its line (ctest runs that case again with oneDNN
// capped at AVX2, so it runs on every CPU). Which of oneDNN's kernels a timed bf16 convolution
// takes is tested in tests/core/model/onednn_paths_test.cc.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

#include "cmd/run_checks.h"
#include "common/native_bf16.h"
#include "common/process.h"
#include "common/temp_dir.h"
#include "integration/finished_run.h"
#include "integration/interrupted_run.h"

namespace dtrain::testing {
namespace bf16_jobs_test {

// 1200 rows of blobs seen as 1x6x6 images; conv 3x3x4 (same), max-pool, dense 3 on 2 sync
// replicas. `precision`: "fp32" or "bf16"; `checkpoint`: the [checkpoint] policy line.
std::string CnnJob(const std::string& precision, const std::string& checkpoint,
                   long long steps = 60) {
  return "name = \"cnn-" + precision +
         "\"\n[data]\nformat = \"synthetic\"\nsynthetic = \"blobs\"\nrows = 1200\n"
         "test_rows = 300\nfeatures = 36\nclasses = 3\nnoise = 1.5\n"
         "[model]\ntype = \"sequential\"\ninput_shape = [1, 6, 6]\n"
         "[[model.layers]]\ntype = \"conv2d\"\nfilters = 4\nkernel = 3\npadding = \"same\"\n"
         "activation = \"relu\"\n"
         "[[model.layers]]\ntype = \"maxpool2d\"\n"
         "[[model.layers]]\ntype = \"dense\"\nunits = 3\n"
         "[train]\nepochs = 0\nsteps = " +
         std::to_string(steps) + "\neval_every = 30\nbatch_size = 16\nseed = 3\nprecision = \"" +
         precision +
         "\"\n[optimizer]\ntype = \"adam\"\nlr = 0.01\n"
         "[cluster]\nworkers = 2\nmode = \"sync\"\n[checkpoint]\n" +
         checkpoint;
}

// The jobs' convolutions on oneDNN, untimed (DTRAIN_CONV, which their processes inherit): two
// replicas, or a run and its resume, that timed a product onto different paths or kernels would
// round differently (man/dtrain.1), and these tests compare bits.
struct OnednnConvolutions {
  OnednnConvolutions() {
    if (const char* before = std::getenv("DTRAIN_CONV")) kept = before;
    setenv("DTRAIN_CONV", "onednn", 1);
  }
  ~OnednnConvolutions() {
    if (kept) {
      setenv("DTRAIN_CONV", kept->c_str(), 1);
    } else {
      unsetenv("DTRAIN_CONV");
    }
  }
  std::optional<std::string> kept;
};

BOOST_FIXTURE_TEST_SUITE(bf16_jobs, OnednnConvolutions)

BOOST_AUTO_TEST_CASE(a_bf16_job_trains_as_fp32_does_and_each_replica_says_so,
                     *boost::unit_test::precondition(NativeBf16Here)) {
  TempDir dir;
  const Finished fp32 = RunJob(dir, "fp32", CnnJob("fp32", "every_steps = 20\n"));
  const Finished bf16 = RunJob(dir, "bf16", CnnJob("bf16", "every_steps = 20\n"));
  CheckReplicasAgree(bf16, 2);
  BOOST_TEST(bf16.params != fp32.params, "the bf16 job has the fp32 job's very bits");
  // Blobs of 3 classes: both end far below an untrained model's ln 3 = 1.10, and bf16's rounding
  // (2^-8 of each product's inputs) leaves it near fp32's.
  BOOST_TEST(fp32.eval_loss.at(0) < 0.7);
  BOOST_TEST(bf16.eval_loss.at(0) < fp32.eval_loss.at(0) * 1.2 + 0.02);
  const auto says_bf16 = [](const store::LogRow& row) {
    return row.line.find("precision: bf16 matrix products and convolutions on ") == 0;
  };
  for (int worker : {0, 1}) {
    BOOST_TEST(std::count_if(bf16.logs.begin(), bf16.logs.end(),
                             [&](const store::LogRow& row) {
                               return row.worker == worker && says_bf16(row);
                             }) == 1,
               "worker " << worker);
  }
  BOOST_TEST(std::none_of(fp32.logs.begin(), fp32.logs.end(), says_bf16));
}

BOOST_AUTO_TEST_CASE(an_interrupted_and_resumed_bf16_run_ends_with_the_bits_of_a_straight_run,
                     *boost::unit_test::precondition(NativeBf16Here)) {
  TempDir dir;
  InterruptAndResumeEachPolicy(
      dir, [](const std::string& policy) { return CnnJob("bf16", policy, 1'000'000); }, 40,
      [](const Resumed& r) {
        BOOST_TEST(cli::run_checks::SameState(r.straight, r.resumed),
                   "the resumed run differs from the straight run");
      });
}

BOOST_AUTO_TEST_CASE(a_bf16_job_is_refused_at_its_line_where_the_cpu_lacks_it,
                     *boost::unit_test::precondition(NoNativeBf16Here)) {
  TempDir dir;
  const std::string job = dir.Write("job.toml", CnnJob("bf16", "every_steps = 20\n"));
  const ProcessResult run =
      RunProcess({EnvPath("DTRAIN_BIN"), "run", job, "--db", dir.Path("job.db")}, dir.Path(""));
  BOOST_TEST(run.exit_code == 2);  // usage: the job file is wrong for this host
  BOOST_TEST(run.err.find("job.toml:30:13: train.precision: \"bf16\" needs a CPU that multiplies "
                          "bf16 natively (AVX512_BF16 or AMX-BF16)") != std::string::npos,
             run.err);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace bf16_jobs_test
}  // namespace dtrain::testing
