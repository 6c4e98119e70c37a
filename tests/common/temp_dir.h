// TempDir: a fresh temporary directory for one test, deleted with everything in it when the
// object goes away; plus writers for plain and gzip-compressed files inside it.
//
//   TempDir dir;
//   std::string path = dir.Write("train.csv", "a,b,label\n1,2,0\n");
//
// One thread at a time.
#pragma once

#include <stdlib.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace dtrain::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "dtrain-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string Path(std::string_view name) const { return (path_ / name).string(); }

  // Writes `content` as is; returns the file's path.
  std::string Write(std::string_view name, std::string_view content) const {
    const std::string path = Path(name);
    std::ofstream out(path, std::ios::binary);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    return path;
  }

  // Writes `content` gzip-compressed; returns the file's path.
  std::string WriteGz(std::string_view name, std::string_view content) const {
    const std::string path = Path(name);
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, content.data(), static_cast<unsigned>(content.size()));
    gzclose(f);
    return path;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace dtrain::testing
