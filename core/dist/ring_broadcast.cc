#include "core/dist/ring_broadcast.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace dtrain::dist {
namespace {

constexpr std::size_t kSegmentFloats = 64 << 10;  // 256 KiB a message
constexpr std::size_t kLengthFloats = sizeof(std::uint64_t) / sizeof(float);
// More than any state a job's checkpoint frame can carry: a length above it is a broken peer's.
constexpr std::uint64_t kMaxBlobBytes = std::uint64_t{1} << 31;

}  // namespace

Result<std::string> RingBroadcast(int position, int world, const RingLinks& links, int root,
                                  std::string blob, std::uint32_t tag, Deadline deadline) {
  if (world < 1 || position < 0 || position >= world || root < 0 || root >= world) {
    return Status::Error("broadcast: member " + std::to_string(position) + " of " +
                         std::to_string(world) + " from " + std::to_string(root) + " is no seat");
  }
  if (world == 1) return blob;
  // A failure closes the link to the right, so the members after this one fail at once too.
  const auto fail = [&links](Status why) -> Status {
    links.right->Close();
    return why;
  };
  const bool is_root = position == root;
  const bool forwards = !is_root && (position + 1) % world != root;
  std::uint64_t length = blob.size();
  std::vector<float> message(kLengthFloats);
  if (is_root) {
    std::memcpy(message.data(), &length, sizeof length);
  } else {
    if (Status s = links.left->Recv(tag, message, deadline); !s.ok()) return fail(s);
    std::memcpy(&length, message.data(), sizeof length);
    if (length > kMaxBlobBytes) {
      return fail(Status::Error("broadcast: " + links.left->peer() + " announced " +
                                std::to_string(length) + " bytes"));
    }
  }
  if (is_root || forwards) {
    if (Status s = links.right->Send(tag, message, deadline); !s.ok()) return fail(s);
  }
  const std::size_t floats = (length + sizeof(float) - 1) / sizeof(float);
  std::vector<float> words(floats);
  if (is_root) std::copy(blob.begin(), blob.end(), reinterpret_cast<char*>(words.data()));
  for (std::size_t begin = 0; begin < floats; begin += kSegmentFloats) {
    const std::span<float> segment =
        std::span<float>(words).subspan(begin, std::min(kSegmentFloats, floats - begin));
    if (!is_root) {
      if (Status s = links.left->Recv(tag, segment, deadline); !s.ok()) return fail(s);
    }
    if (is_root || forwards) {
      if (Status s = links.right->Send(tag, segment, deadline); !s.ok()) return fail(s);
    }
  }
  if (!is_root) {
    const char* bytes = reinterpret_cast<const char*>(words.data());
    blob.assign(bytes, bytes + length);
  }
  return blob;
}

}  // namespace dtrain::dist
