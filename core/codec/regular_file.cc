#include "core/codec/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/unique_fd.h"

namespace dtrain::codec {

std::string NotRegularKind(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    default: return "not a file";
  }
}

Result<int> OpenRegularFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO with no writer returns at once; it is cleared before any read.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd) return Status::Error(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Status::Error(std::strerror(errno));
  if (const std::string kind = NotRegularKind(st.st_mode); !kind.empty()) {
    return Status::Error("it is " + kind + ", not a regular file");
  }
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return Status::Error(std::strerror(errno));
  }
  return fd.release();
}

}  // namespace dtrain::codec
