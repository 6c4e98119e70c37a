// Every job file in examples/ runs as it is: each validates, and the small synthetic ones train
// to success through the real binary (the Fashion-MNIST ones are run by bench/fashion-accuracy).
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/process.h"
#include "common/temp_dir.h"

namespace dtrain::cli {
namespace examples_test {

using dtrain::testing::RunProcess;
using dtrain::testing::TempDir;

BOOST_AUTO_TEST_CASE(every_example_validates_and_the_synthetic_ones_train) {
  const char* bin = std::getenv("DTRAIN_BIN");
  const char* source = std::getenv("DTRAIN_SOURCE_DIR");
  BOOST_REQUIRE(bin != nullptr && source != nullptr);
  TempDir dir;
  int examples = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(source) + "/examples")) {
    if (entry.path().extension() != ".toml") continue;
    ++examples;
    const std::string path = entry.path().string();
    BOOST_TEST_CONTEXT(path) {
      const auto validated = RunProcess({bin, "validate", path}, dir.Path(""));
      BOOST_TEST(validated.exit_code == 0, validated.err);
      if (entry.path().stem() == "fashion-mnist-cnn") {  // the layers, resolved
        BOOST_TEST(validated.out.find("# model: 454922 parameters") != std::string::npos);
        for (const char* shape : {"32x28x28", "32x14x14", "64x14x14", "64x7x7"}) {
          BOOST_TEST(validated.out.find(shape) != std::string::npos, shape);
        }
        // Which path each convolution and pooling shape takes, timed here (onednn_paths.h),
        // unless the environment forces one.
        const std::string forced = std::getenv("DTRAIN_CONV") ? std::getenv("DTRAIN_CONV") : "";
        if (forced == "im2col" || forced == "onednn") {
          BOOST_TEST(validated.out.find("\n# convolutions and pooling: ") != std::string::npos);
        } else {
          for (const char* shape :
               {"\n# conv2d 32x5x5 over 1x28x28 to 32x28x28: ",
                "\n# conv2d 64x5x5 over 32x14x14 to 64x14x14: ", "\n# maxpool 2 over 32x28x28: ",
                "\n# maxpool 2 over 64x14x14: "}) {
            BOOST_TEST(validated.out.find(shape) != std::string::npos, shape);
          }
        }
      }
      if (validated.out.find("format = \"synthetic\"") == std::string::npos) continue;
      const auto ran =
          RunProcess({bin, "run", path, "--db", dir.Path("examples.db"), "--json"}, dir.Path(""));
      BOOST_TEST(ran.exit_code == 0, ran.err);
      BOOST_TEST(ran.out.find("\"state\":\"succeeded\"") != std::string::npos, ran.out);
    }
  }
  BOOST_TEST(examples >= 4);
}

}  // namespace examples_test
}  // namespace dtrain::cli
