#include "core/data/mapped_file.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/codec/regular_file.h"

namespace dtrain::data {

Result<std::shared_ptr<const MappedFile>> MappedFile::Open(const std::string& path) {
  Result<int> fd = codec::OpenRegularFile(path);
  if (!fd.ok()) return Status::Error(path + ": " + fd.status().message());
  struct stat st {};
  if (::fstat(fd.value(), &st) != 0) {
    const int err = errno;
    ::close(fd.value());
    return Status::Error(path + ": " + std::strerror(err));
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  void* data = nullptr;
  if (size > 0) {
    data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.value(), 0);
    const int err = errno;
    ::close(fd.value());  // the mapping keeps the file open
    if (data == MAP_FAILED) {
      if (err == ENOMEM) {
        return Status::Error(path + ": cannot map its " + std::to_string(size) +
                             " bytes into memory: the address space is too small (a mapped file "
                             "counts whole against [train] memory_limit)");
      }
      return Status::Error(path + ": cannot map it into memory: " + std::strerror(err));
    }
  } else {
    ::close(fd.value());
  }
  return std::shared_ptr<const MappedFile>(
      new MappedFile(path, static_cast<const std::uint8_t*>(data), size));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::uint8_t*>(data_), size_);
}

}  // namespace dtrain::data
