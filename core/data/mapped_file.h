// A whole regular file mapped read-only into memory (mmap): its pages are read from the file when
// first touched and, being clean file pages, may be dropped again under memory pressure, so a
// data file larger than RAM can be trained on. The mapping counts whole against an address-space
// limit (RLIMIT_AS: [train] memory_limit), which is named in the error when it is too small.
//
//   Result<std::shared_ptr<const MappedFile>> f = MappedFile::Open(path);
//   std::span<const std::uint8_t> bytes = f.value()->bytes();
//
// Errors start with the path. The file must not be truncated while mapped (reading a page past
// its new end raises SIGBUS); data files are the job's inputs, not written while it runs.
// Immutable once opened: safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "core/status.h"

namespace dtrain::data {

class MappedFile {
 public:
  static Result<std::shared_ptr<const MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const std::uint8_t* data, std::size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  const std::uint8_t* data_ = nullptr;  // nullptr for an empty file
  std::size_t size_ = 0;
};

}  // namespace dtrain::data
