// Files that are not regular files are refused at once by every reader of a file a user names
// (core/codec/regular_file.h): a FIFO with no writer, /dev/zero and /dev/urandom, a directory, and
// a symlink to any of them. Before, a FIFO blocked the reader for ever and /dev/zero fed it without
// end. Each case returns (the test would hang, not fail, without the check).
#include "core/codec/regular_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <string>

#include "common/temp_dir.h"
#include "core/codec/file_bytes.h"
#include "core/codec/gzip_or_plain_file.h"
#include "core/data/readers.h"

namespace dtrain::codec {
namespace regular_file_test {

using testing::TempDir;

bool Says(const Status& s, const std::string& part) {
  return s.message().find(part) != std::string::npos;
}

struct Specials {
  Specials() {
    BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    std::filesystem::create_symlink("/dev/zero", zero_link);
  }
  TempDir dir;
  std::string fifo = dir.Path("data.fifo");
  std::string zero_link = dir.Path("zero.csv");
};

BOOST_AUTO_TEST_SUITE(regular_file)

BOOST_AUTO_TEST_CASE(a_regular_file_opens_and_reads) {
  TempDir dir;
  const std::string path = dir.Write("a.txt", "hello");
  Result<int> fd = OpenRegularFile(path);
  BOOST_REQUIRE(fd.ok());
  char buffer[8] = {};
  BOOST_TEST(::read(fd.value(), buffer, sizeof buffer) == 5);  // blocking reads, not O_NONBLOCK
  ::close(fd.value());
  BOOST_TEST(ReadFileBytes(path).value() == "hello");
}

BOOST_AUTO_TEST_CASE(fifos_devices_directories_and_links_to_them_are_refused) {
  Specials s;
  BOOST_TEST(Says(OpenRegularFile(s.fifo).status(), "it is a FIFO, not a regular file"));
  BOOST_TEST(Says(OpenRegularFile("/dev/zero").status(), "a character device"));
  BOOST_TEST(Says(OpenRegularFile("/dev/urandom").status(), "a character device"));
  BOOST_TEST(Says(OpenRegularFile(s.zero_link).status(), "a character device"));
  BOOST_TEST(Says(OpenRegularFile(s.dir.path().string()).status(), "a directory"));
  BOOST_TEST(Says(OpenRegularFile(s.dir.Path("none")).status(), "No such file"));
}

BOOST_AUTO_TEST_CASE(every_data_reader_refuses_them_naming_the_path) {
  Specials s;
  const Result<data::Dataset> csv = data::ReadCsv(s.fifo, {});
  BOOST_TEST(Says(csv.status(), s.fifo + ": cannot open: it is a FIFO"), csv.status().message());
  const Result<data::Dataset> svm = data::ReadLibsvm(s.zero_link, 4);
  BOOST_TEST(Says(svm.status(), "not a regular file"), svm.status().message());
  const Result<data::Dataset> idx = data::ReadIdx("/dev/zero", s.fifo);
  BOOST_TEST(Says(idx.status(), "not a regular file"), idx.status().message());
  BOOST_TEST(Says(GzipOrPlainFile::Open(s.fifo).status(), "cannot open: it is a FIFO"));
  BOOST_TEST(Says(ReadFileBytes("/dev/urandom").status(), "/dev/urandom: cannot open: it is a"));
}

BOOST_AUTO_TEST_CASE(read_file_bytes_stops_at_its_limit) {
  TempDir dir;
  const std::string path = dir.Write("big", std::string(100, 'x'));
  BOOST_TEST(ReadFileBytes(path, 100).value().size() == 100u);
  BOOST_TEST(Says(ReadFileBytes(path, 99).status(), "larger than the 99 bytes"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace regular_file_test
}  // namespace dtrain::codec
