// dtrain keygen: a key file the daemons accept, private to its owner, never written over.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include "common/process.h"
#include "common/temp_dir.h"
#include "core/net/auth.h"

namespace dtrain::testing {
namespace keygen_test {

BOOST_AUTO_TEST_SUITE(keygen)

BOOST_AUTO_TEST_CASE(writes_a_private_key_file_once) {
  TempDir dir;
  const std::string path = dir.Path("cluster.key");
  const std::string dtrain = std::getenv("DTRAIN_BIN");
  const ProcessResult made = RunProcess({dtrain, "keygen", path}, dir.Path(""));
  BOOST_TEST(made.exit_code == 0, made.err);
  struct stat st {};
  BOOST_REQUIRE(::stat(path.c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0600u);
  const auto key = net::LoadClusterKey(path);
  BOOST_TEST(key.ok());
  const std::string first = ReadFile(path);

  const ProcessResult again = RunProcess({dtrain, "keygen", path}, dir.Path(""));
  BOOST_TEST(again.exit_code == 1);
  BOOST_TEST(again.err.find("refusing to overwrite") != std::string::npos, again.err);
  BOOST_TEST(ReadFile(path) == first);

  // Two keys are never the same.
  const std::string other = dir.Path("other.key");
  BOOST_TEST(RunProcess({dtrain, "keygen", other}, dir.Path("")).exit_code == 0);
  BOOST_TEST(ReadFile(other) != first);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace keygen_test
}  // namespace dtrain::testing
