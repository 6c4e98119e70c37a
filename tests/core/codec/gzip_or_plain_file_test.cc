// GzipOrPlainFile against files zlib wrote: the content comes back whatever the read sizes, gzip
// members follow one another, and damage, truncation and trailing bytes are errors.
#include "core/codec/gzip_or_plain_file.h"

#include <boost/test/unit_test.hpp>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "common/temp_dir.h"

namespace dtrain::codec {
namespace gzip_or_plain_file_test {

using testing::TempDir;

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// `bytes` of which every 4th is random: compressible, yet several of the reader's input buffers.
std::string Content(std::size_t bytes, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(bytes, '\0');
  for (std::size_t i = 0; i < bytes; ++i) s[i] = static_cast<char>(i % 4 == 0 ? rng() : i / 4);
  return s;
}

// Reads the whole file `chunk` bytes at a time (a short read only at the end).
Result<std::string> ReadAll(const std::string& path, std::size_t chunk) {
  Result<GzipOrPlainFile> f = GzipOrPlainFile::Open(path);
  if (!f.ok()) return f.status();
  std::string all, buffer(chunk, '\0');
  for (;;) {
    Result<std::size_t> got = f.value().Read(buffer.data(), chunk);
    if (!got.ok()) return got.status();
    all.append(buffer, 0, got.value());
    if (got.value() < chunk) return all;
  }
}

void CheckError(const std::string& path, const std::string& expected) {
  const Result<std::string> r = ReadAll(path, 4096);
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(r.status().message().find(expected) != std::string::npos, r.status().message());
}

BOOST_AUTO_TEST_SUITE(gzip_or_plain_file)

BOOST_AUTO_TEST_CASE(plain_and_gzip_files_read_back_whatever_the_read_sizes) {
  TempDir dir;
  const std::string content = Content(3 << 20, 1);
  const std::string plain = dir.Write("plain", content), gz = dir.WriteGz("content.gz", content);
  BOOST_TEST_REQUIRE(FileBytes(gz).size() > std::size_t{1} << 19);  // more than one input buffer
  for (const std::size_t chunk : {std::size_t{1} << 22, std::size_t{65537}, std::size_t{7}}) {
    for (const std::string& path : {plain, gz}) {
      const Result<std::string> r = ReadAll(path, chunk);
      BOOST_TEST_REQUIRE(r.ok(), r.status().message());
      BOOST_TEST((r.value() == content), path << " in chunks of " << chunk);
    }
  }
}

BOOST_AUTO_TEST_CASE(files_shorter_than_the_gzip_magic_are_plain) {
  TempDir dir;
  for (const std::string content : {"", "x", "\x1f"}) {
    const Result<std::string> r = ReadAll(dir.Write("short", content), 16);
    BOOST_TEST_REQUIRE(r.ok(), r.status().message());
    BOOST_TEST(r.value() == content);
  }
}

BOOST_AUTO_TEST_CASE(gzip_members_one_after_another_read_as_one_stream) {
  TempDir dir;
  const std::string first = Content(100000, 2), second = Content(70000, 3);
  const std::string joined = dir.Write(
      "joined.gz", FileBytes(dir.WriteGz("a.gz", first)) + FileBytes(dir.WriteGz("b.gz", second)));
  const Result<std::string> r = ReadAll(joined, 10000);
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  BOOST_TEST((r.value() == first + second));
}

BOOST_AUTO_TEST_CASE(a_damaged_checksum_a_cut_stream_and_trailing_bytes_are_errors) {
  TempDir dir;
  const std::string gz = FileBytes(dir.WriteGz("whole.gz", Content(200000, 4)));
  std::string damaged = gz;
  damaged[damaged.size() - 6] ^= 0x01;  // the trailer: CRC-32, then the length
  CheckError(dir.Write("damaged.gz", damaged), "damaged");
  CheckError(dir.Write("cut.gz", gz.substr(0, gz.size() / 2)), "truncated");
  CheckError(dir.Write("cut-trailer.gz", gz.substr(0, gz.size() - 3)), "truncated");
  CheckError(dir.Write("trailing.gz", gz + "tail"), "unexpected data after the end");
  CheckError(dir.Path("no-such-file.gz"), "cannot open: No such file or directory");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace gzip_or_plain_file_test
}  // namespace dtrain::codec
