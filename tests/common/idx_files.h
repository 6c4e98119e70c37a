// IDX test data: the bytes of a handmade IDX file, and where the real Fashion-MNIST set lives
// (Debian's dataset-fashion-mnist package) with a precondition for tests that need it.
//
//   dir.Write("labels", IdxBytes(0x801, {3}, std::string("\x02\x00\x01", 3)));
//   BOOST_AUTO_TEST_CASE(big, *boost::unit_test::precondition(FashionMnistPresent)) { ... }
//
// Pure functions.
#pragma once

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dtrain::testing {

inline const std::string kFashionDir = "/usr/share/datasets/fashion-mnist";

// An IDX file: big-endian magic, big-endian dimension sizes, then the payload.
inline std::string IdxBytes(std::uint32_t magic, const std::vector<std::uint32_t>& dims,
                            const std::string& payload) {
  std::string out;
  auto put = [&out](std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
  };
  put(magic);
  for (std::uint32_t d : dims) put(d);
  return out + payload;
}

// Skips a test when the Fashion-MNIST files are not installed.
inline boost::test_tools::assertion_result FashionMnistPresent(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result present(
      std::filesystem::exists(kFashionDir + "/train-images-idx3-ubyte.gz") &&
      std::filesystem::exists(kFashionDir + "/t10k-images-idx3-ubyte.gz"));
  present.message() << "Fashion-MNIST not installed under " << kFashionDir;
  return present;
}

}  // namespace dtrain::testing
