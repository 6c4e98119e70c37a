#include "core/dist/shm_segment.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string_view>

#include "core/unique_fd.h"

namespace dtrain::dist {
namespace {

constexpr std::string_view kNamePrefix = "/dtrain-";
constexpr std::size_t kNameRandomBytes = 16;

std::string SystemError(const std::string& what) { return what + ": " + std::strerror(errno); }

Result<ShmMapping> Map(int fd, std::size_t bytes) {
  void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (map == MAP_FAILED) return Status::Error(SystemError("mmap"));
  return ShmMapping(map, bytes);
}

}  // namespace

ShmMapping& ShmMapping::operator=(ShmMapping&& other) noexcept {
  if (this != &other) {
    if (map_ != nullptr) ::munmap(map_, bytes_);
    map_ = std::exchange(other.map_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

ShmMapping::~ShmMapping() {
  if (map_ != nullptr) ::munmap(map_, bytes_);
}

Result<std::string> RandomSegmentName() {
  unsigned char bytes[kNameRandomBytes];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Error(SystemError("getrandom"));
    }
    got += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name(kNamePrefix);
  for (unsigned char b : bytes) {
    name += kHex[b >> 4];
    name += kHex[b & 15];
  }
  return name;
}

bool ValidSegmentName(const std::string& name) {
  if (!name.starts_with(kNamePrefix) || name.size() != kNamePrefix.size() + 2 * kNameRandomBytes) {
    return false;
  }
  return name.find_first_not_of("0123456789abcdef", kNamePrefix.size()) == std::string::npos;
}

Result<ShmMapping> CreateShmSegment(const std::string& name, std::size_t bytes) {
  if (!ValidSegmentName(name)) return Status::Error("'" + name + "' is not a segment name");
  const UniqueFd fd(::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) return Status::Error(SystemError("shm_open " + name));
  // Reserved, not only sized: a segment larger than what /dev/shm has free fails here, where a
  // sized one would fail later with SIGBUS at the first touch of a page with nowhere to go.
  if (const int error = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(bytes)); error != 0) {
    errno = error;
    Status failed = Status::Error(
        SystemError("reserving " + std::to_string(bytes) + " bytes of shared memory for " + name));
    ::shm_unlink(name.c_str());
    return failed;
  }
  Result<ShmMapping> m = Map(fd.get(), bytes);
  if (!m.ok()) ::shm_unlink(name.c_str());
  return m;
}

Result<ShmMapping> OpenShmSegment(const std::string& name, std::size_t bytes, bool unlink) {
  if (!ValidSegmentName(name)) return Status::Error("'" + name + "' is not a segment name");
  const UniqueFd fd(::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0));
  const int open_errno = errno;
  if (unlink) ::shm_unlink(name.c_str());
  errno = open_errno;
  if (!fd) return Status::Error(SystemError("shm_open " + name));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || st.st_uid != ::geteuid() ||
      static_cast<std::uint64_t>(st.st_size) != bytes) {
    return Status::Error("segment " + name + " is not this user's or not " + std::to_string(bytes) +
                         " bytes");
  }
  return Map(fd.get(), bytes);
}

void UnlinkShmSegment(const std::string& name) {
  if (ValidSegmentName(name)) ::shm_unlink(name.c_str());
}

}  // namespace dtrain::dist
