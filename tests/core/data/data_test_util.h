// Helpers for the core/data tests: a self-deleting temporary directory and file writers.
//
//   TempDir dir;
//   std::string path = dir.Write("train.csv", "a,b,label\n1,2,0\n");
//
// One thread at a time.
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace dtrain::data::testing {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const auto base = std::filesystem::temp_directory_path();
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    for (;;) {
      path_ = base / ("dtrain-data-test-" + std::to_string(::getpid()) + "-" +
                      std::to_string(stamp) + "-" + std::to_string(counter++));
      if (std::filesystem::create_directory(path_)) break;
    }
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

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

}  // namespace dtrain::data::testing
