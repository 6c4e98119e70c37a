// Named POSIX shared-memory segments between processes of one host, for the shared-memory link
// (shm_link.h) and the host-shared synchronous step (host_sync_strategy.h): made under an
// unguessable name ("/dtrain-" and 32 hex digits), readable and writable by this user only,
// mapped whole with its pages populated.
//
//   Result<std::string> name = RandomSegmentName();
//   Result<ShmMapping> mine = CreateShmSegment(name.value(), bytes);   // one process
//   Result<ShmMapping> theirs = OpenShmSegment(name.value(), bytes);   // the others
//   UnlinkShmSegment(name.value());  // once every process has it open; the mappings stay
//
// A mapping is unmapped when its ShmMapping goes. Errors name the call and the segment.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "core/status.h"

namespace dtrain::dist {

class ShmMapping {
 public:
  ShmMapping() = default;
  ShmMapping(void* map, std::size_t bytes) : map_(map), bytes_(bytes) {}
  ShmMapping(ShmMapping&& other) noexcept
      : map_(std::exchange(other.map_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  ShmMapping& operator=(ShmMapping&& other) noexcept;
  ShmMapping(const ShmMapping&) = delete;
  ShmMapping& operator=(const ShmMapping&) = delete;
  ~ShmMapping();

  void* data() const { return map_; }
  std::size_t size() const { return bytes_; }
  // Hands the mapping to the caller, who unmaps it.
  void* Release() { return std::exchange(map_, nullptr); }

 private:
  void* map_ = nullptr;
  std::size_t bytes_ = 0;
};

// "/dtrain-" and 32 random lower-case hex digits.
Result<std::string> RandomSegmentName();
// Whether `name` has that form: the only names these functions create, open or unlink.
bool ValidSegmentName(const std::string& name);

// Creates a segment of `bytes` zero bytes under `name` (which must not exist), its memory
// reserved (an error, not a later SIGBUS, when /dev/shm lacks room), and maps it.
Result<ShmMapping> CreateShmSegment(const std::string& name, std::size_t bytes);
// Maps the segment `name`, which must be this user's and exactly `bytes` long. With `unlink`,
// removes the name once it is open (the last process to open it).
Result<ShmMapping> OpenShmSegment(const std::string& name, std::size_t bytes, bool unlink);
// Removes the name; the segment lives on while anything maps it.
void UnlinkShmSegment(const std::string& name);

}  // namespace dtrain::dist
