#include "core/dist/link.h"

#include <algorithm>

namespace dtrain::dist {

Status Link::Recv(std::uint32_t tag, std::span<float> out, Deadline deadline) {
  Result<std::uint32_t> got = RecvAnyTag(out, deadline);
  if (!got.ok()) return got.status();
  if (got.value() != tag) return TagMismatch(tag, got.value());
  return Status::Ok();
}

Result<Link::Received> Link::RecvFold(std::span<float> out, const FoldAccept& /*accept*/,
                                      const FoldPiece& /*fold*/, Deadline deadline) {
  Result<std::uint32_t> got = RecvAnyTag(out, deadline);
  if (!got.ok()) return got.status();
  return Received{.tag = got.value(), .folded = false};
}

Status Link::TagMismatch(std::uint32_t want, std::uint32_t got) const {
  return Status::Error("tag mismatch: " + peer() + " sent a message tagged " + std::to_string(got) +
                       " where one tagged " + std::to_string(want) + " was expected");
}

std::vector<Link*> LinkPointers(const std::vector<std::unique_ptr<Link>>& owned) {
  std::vector<Link*> out;
  out.reserve(owned.size());
  for (const auto& link : owned) out.push_back(link.get());
  return out;
}

std::chrono::milliseconds Remaining(Deadline deadline) {
  return std::max(std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()),
                  std::chrono::milliseconds(0));
}

}  // namespace dtrain::dist
