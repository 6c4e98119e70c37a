#include "daemon/store/space_reserve.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>
#include <utility>

namespace dtrain::store {

SpaceReserve::SpaceReserve(std::string path, std::uint64_t bytes)
    : path_(std::move(path)), bytes_(bytes) {}

bool SpaceReserve::Make() {
  if (bytes_ == 0) return false;
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && static_cast<std::uint64_t>(st.st_blocks) * 512 >= bytes_) {
    held_ = true;
    return true;
  }
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return held_ = false;
  // Real blocks, not a sparse file: the space must be there to give back.
  const bool allocated = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes_)) == 0;
  const bool closed = ::close(fd) == 0;
  held_ = allocated && closed;
  if (!held_) ::unlink(path_.c_str());
  return held_;
}

bool SpaceReserve::MakeIfRoom() {
  if (bytes_ == 0) return false;
  const std::string dir = std::filesystem::path(path_).parent_path().string();
  struct statvfs fs {};
  if (::statvfs(dir.empty() ? "." : dir.c_str(), &fs) != 0) return false;
  const auto free = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
  return free >= 2 * bytes_ && Make();
}

bool SpaceReserve::Release() {
  if (!held_) return false;
  held_ = false;
  return ::unlink(path_.c_str()) == 0;
}

}  // namespace dtrain::store
