#include "core/codec/file_bytes.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "core/codec/regular_file.h"
#include "core/unique_fd.h"

namespace dtrain::codec {

namespace {

// A new file beside `path` that nobody else made: O_EXCL refuses a name that exists, a symlink
// planted there included, and another random name is tried. Its mode is 0666 less the umask.
int CreateTemporaryBeside(const std::string& path, std::string* tmp) {
  std::random_device random;
  for (int attempt = 0; attempt < 16; ++attempt) {
    *tmp = path + ".tmp-" + std::to_string(random()) + std::to_string(random());
    const int fd = ::open(tmp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view bytes) {
  std::string tmp;
  UniqueFd fd(CreateTemporaryBeside(path, &tmp));
  if (!fd) return Status::Error(path + ": cannot create: " + std::strerror(errno));
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd.get(), bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      fd.reset();
      ::unlink(tmp.c_str());
      return Status::Error(path + ": write failed: " + std::strerror(err));
    }
    written += static_cast<std::size_t>(n);
  }
  // Closed here, not by its owner: a write the kernel reports only at close fails the file.
  if (::fsync(fd.get()) != 0 || ::close(fd.release()) != 0) {
    ::unlink(tmp.c_str());
    return Status::Error(path + ": cannot flush to disk: " + std::strerror(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Status::Error(path + ": cannot rename into place: " + std::strerror(err));
  }
  return Status::Ok();
}

Result<std::string> ReadFileBytes(const std::string& path, std::size_t limit) {
  Result<int> opened = OpenRegularFile(path);
  if (!opened.ok()) return Status::Error(path + ": cannot open: " + opened.status().message());
  const UniqueFd fd(opened.value());
  std::string bytes;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd.get(), chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Status::Error(path + ": read failed: " + std::strerror(errno));
    if (got == 0) break;
    if (bytes.size() + static_cast<std::size_t>(got) > limit) {
      return Status::Error(path + ": larger than the " + std::to_string(limit) +
                           " bytes it may have");
    }
    bytes.append(chunk, static_cast<std::size_t>(got));
  }
  return bytes;
}

}  // namespace dtrain::codec
