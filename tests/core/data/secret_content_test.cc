// No reader quotes what it read: every reader of a file a job or a user names (CSV, libsvm, IDX
// images and labels, NumPy .npy and .npz files, model files) is fed files of secret-shaped content
// — a cluster key in hex, a password line, a private key, random bytes, numbers — placed as the
// whole file, a cell, a label, an index:value pair or a header, and none of its error messages may
// contain any five consecutive characters of the secret, nor the hex of any four consecutive bytes
// of the file.
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/npy_files.h"
#include "common/temp_dir.h"
#include "core/data/readers.h"
#include "core/train/model_file.h"

namespace dtrain::data {
namespace secret_content_test {

using dtrain::testing::TempDir;

struct Secret {
  std::string name;
  std::string text;
};

std::vector<Secret> Secrets() {
  std::mt19937 random(20261201);
  std::string bytes(256, '\0');
  for (char& c : bytes) c = static_cast<char>(random() & 0xff);
  return {
      {"cluster key", "3f9a0c7e5b2d4a6c8e1f3b5d7a9c0e2f4b6d8a1c3e5f7b9d0a2c4e6f8b1d3a5c"},
      {"password line", "password=Zq8xK3vP9mW2rT7y"},
      {"private key",
       "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
       "-----END OPENSSH PRIVATE KEY-----"},
      {"random bytes", bytes},
      {"fractional number", "8675309.25"},
      {"large integer", "98765432109"},
      {"negative integer", "-7777777"},
      {"huge index pair", "98765432109:4242.5"},
      {"word pair", "Zq8xK3vP:9mW2"},
  };
}

// The file's content as it may appear in a message: every 5-byte window of the secret, and the
// hex of every 4-byte window of the whole file (a magic number or a checksum read from it).
std::vector<std::string> Leaks(const std::string& secret, const std::string& file) {
  std::vector<std::string> leaks;
  for (std::size_t i = 0; i + 5 <= secret.size(); ++i) leaks.push_back(secret.substr(i, 5));
  for (std::size_t i = 0; i + 4 <= file.size(); ++i) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned>(static_cast<unsigned char>(file[i + k])); };
    char hex[16];
    std::snprintf(hex, sizeof hex, "%08x", (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3));
    leaks.push_back(hex);
  }
  return leaks;
}

// Files that hold the secret somewhere a reader looks.
std::vector<std::pair<std::string, std::string>> Placements(const std::string& secret) {
  return {
      {"the whole file", secret},
      {"a line after good rows", "a,b,label\n1,2,0\n" + secret + "\n"},
      {"a csv cell", "a,b,label\n1," + secret + ",0\n"},
      {"a csv label", "a,b,label\n1,2," + secret + "\n"},
      {"a csv header", secret + ",b,label\n1,2,0\n"},
      {"a libsvm label", "1 1:0.5\n" + secret + " 1:1\n"},
      {"a libsvm pair", "1 1:0.5\n0 " + secret + "\n"},
      {"a libsvm index", "1 " + secret + ":1\n"},
      {"a libsvm value", "1 2:" + secret + "\n"},
      {"an idx header", std::string("\0\0\x08\x03", 4) + secret},
      {"an npy header", testing::NpyBytes(secret, "")},
      {"an npy dtype", testing::NpyBytes(testing::NpyDict(secret, "(1, 1)"), std::string(8, '\0'))},
      {"an npz member's name", testing::NpzBytes({{secret, testing::NpyBytes("{}", "")}})},
      {"a model file's body", "DTRMODEL" + secret},
  };
}

// Runs `read` over every secret in every placement; each failure's message (without the file's
// path, which is the test's own) must hold none of the file's content.
void CheckNoReaderQuotes(const std::string& reader,
                         const std::function<Status(const std::string& path)>& read) {
  TempDir dir;
  int failures = 0;
  for (const Secret& secret : Secrets()) {
    for (const auto& [where, content] : Placements(secret.text)) {
      const std::string path = dir.Write("data", content);
      const Status s = read(path);
      if (s.ok()) continue;
      ++failures;
      std::string message = s.message();
      for (std::size_t at; (at = message.find(path)) != std::string::npos;) message.erase(at, path.size());
      for (const std::string& leak : Leaks(secret.text, content)) {
        BOOST_TEST(message.find(leak) == std::string::npos,
                   reader << " quoted the " << secret.name << " in " << where << ": " << s.message());
      }
    }
  }
  BOOST_TEST(failures > 0, reader << " refused none of the files");  // the check looked at errors
}

BOOST_AUTO_TEST_CASE(csv_errors_never_quote_the_file) {
  CheckNoReaderQuotes("csv", [](const std::string& p) { return ReadCsv(p, {}).status(); });
  CheckNoReaderQuotes("csv without header", [](const std::string& p) {
    CsvOptions o;
    o.header = false;
    return ReadCsv(p, o).status();
  });
  CheckNoReaderQuotes("csv by label name", [](const std::string& p) {
    CsvOptions o;
    o.label_column = "label";
    return ReadCsv(p, o).status();
  });
  CheckNoReaderQuotes("csv regression", [](const std::string& p) {
    CsvOptions o;
    o.classification = false;
    return ReadCsv(p, o).status();
  });
}

BOOST_AUTO_TEST_CASE(libsvm_errors_never_quote_the_file) {
  CheckNoReaderQuotes("libsvm", [](const std::string& p) { return ReadLibsvm(p, 8).status(); });
  CheckNoReaderQuotes("libsvm regression",
                      [](const std::string& p) { return ReadLibsvm(p, 8, false).status(); });
}

BOOST_AUTO_TEST_CASE(idx_errors_never_quote_the_file) {
  TempDir good;
  // Three 1x1 images and their labels: the secret is read as one file of a valid pair.
  const std::string images =
      good.Write("images", std::string("\0\0\x08\x03\0\0\0\x03\0\0\0\x01\0\0\0\x01\x01\x02\x03", 19));
  const std::string labels = good.Write("labels", std::string("\0\0\x08\x01\0\0\0\x03\0\x01\x02", 11));
  CheckNoReaderQuotes("idx images", [&](const std::string& p) { return ReadIdx(p, labels).status(); });
  CheckNoReaderQuotes("idx labels", [&](const std::string& p) { return ReadIdx(images, p).status(); });
  CheckNoReaderQuotes("idx shape",
                      [&](const std::string& p) { return ReadIdxShape(p, labels).status(); });
}

BOOST_AUTO_TEST_CASE(npy_errors_never_quote_the_file) {
  TempDir good;
  // One row of two float32 features and its label: the secret is read as one file of a pair.
  const std::string features = good.Write(
      "x.npy", testing::NpyBytes(testing::NpyDict("<f4", "(1, 2)"), std::string(8, '\0')));
  const std::string labels =
      good.Write("y.npy", testing::NpyBytes(testing::NpyDict("<i8", "(1,)"), std::string(8, '\0')));
  CheckNoReaderQuotes("npy features",
                      [&](const std::string& p) { return ReadNpy(p, labels, {}).status(); });
  CheckNoReaderQuotes("npy labels",
                      [&](const std::string& p) { return ReadNpy(features, p, {}).status(); });
  CheckNoReaderQuotes("npz", [&](const std::string& p) { return ReadNpy(p, "", {}).status(); });
}

BOOST_AUTO_TEST_CASE(model_file_errors_never_quote_the_file) {
  CheckNoReaderQuotes("model file",
                      [](const std::string& p) { return train::ReadModelFile(p).status(); });
}

}  // namespace secret_content_test
}  // namespace dtrain::data
