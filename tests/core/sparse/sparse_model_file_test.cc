// A sparse model file holds the spec, the hashing and the touched keys' slots, and reads back
// exactly; a damaged or truncated file is an error naming the problem. The spec's one-line text
// reads back too, and a bad one is refused.
#include "core/sparse/sparse_model_file.h"

#include <boost/test/unit_test.hpp>
#include <string>

namespace dtrain::sparse {
namespace sparse_model_file_test {

SparseModelFile Sample() {
  return {.spec = {.type = SparseModelType::kFm, .factors = 2},
          .hash_bits = 18,
          .features = 1u << 18,
          .step = 42,
          .job_name = "ctr",
          .keys = {3, 77, 4'000'000'000u},
          .slots = {0.5f, 0.1f, -0.1f, 0.0f, 1e-3f, 2e-3f, -2.0f, 0.25f, 0.125f},
          .globals = {-1.5f}};
}

BOOST_AUTO_TEST_SUITE(sparse_model_file)

BOOST_AUTO_TEST_CASE(encode_then_decode_gives_the_same_model) {
  const SparseModelFile f = Sample();
  const std::string bytes = EncodeSparseModelFile(f);
  BOOST_TEST(IsSparseModelFile(bytes));
  Result<SparseModelFile> back = DecodeSparseModelFile(bytes);
  BOOST_REQUIRE_MESSAGE(back.ok(), back.status().message());
  BOOST_TEST((back.value().spec == f.spec));
  BOOST_TEST(back.value().hash_bits == 18);
  BOOST_TEST(back.value().features == f.features);
  BOOST_TEST(back.value().step == 42);
  BOOST_TEST(back.value().job_name == "ctr");
  BOOST_TEST(back.value().keys == f.keys);
  BOOST_TEST(back.value().slots == f.slots);
  BOOST_TEST(back.value().globals == f.globals);
}

BOOST_AUTO_TEST_CASE(damage_and_truncation_are_errors) {
  std::string bytes = EncodeSparseModelFile(Sample());
  std::string flipped = bytes;
  flipped[40] ^= 0x10;
  BOOST_TEST(DecodeSparseModelFile(flipped).status().message().find("checksum") !=
             std::string::npos);
  BOOST_TEST(!DecodeSparseModelFile(bytes.substr(0, bytes.size() - 9)).ok());
  BOOST_TEST(!DecodeSparseModelFile("DTRSPARS").ok());
  BOOST_TEST(DecodeSparseModelFile("DTRMODEL and more bytes").status().message().find("magic") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(specs_read_back_and_bad_ones_are_refused) {
  for (const SparseModelSpec& spec :
       {SparseModelSpec{.type = SparseModelType::kLogistic},
        SparseModelSpec{.type = SparseModelType::kSoftmax, .classes = 7},
        SparseModelSpec{.type = SparseModelType::kFm, .factors = 16, .init_scale = 0.05f}}) {
    Result<SparseModelSpec> back = ParseSparseModelSpec(FormatSparseModelSpec(spec));
    BOOST_REQUIRE_MESSAGE(back.ok(), back.status().message());
    BOOST_TEST((back.value() == spec));
  }
  BOOST_TEST(!ParseSparseModelSpec("mlp inputs=3").ok());
  BOOST_TEST(!ParseSparseModelSpec("sparse_fm classes=2 factors=0").ok());
  BOOST_TEST(!ParseSparseModelSpec("sparse_logistic classes=2 depth=3").ok());
  BOOST_TEST(!ParseSparseModelSpec("sparse_svm classes=2").ok());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace sparse_model_file_test
}  // namespace dtrain::sparse
