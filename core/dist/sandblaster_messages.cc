#include "core/dist/sandblaster_messages.h"

#include <array>

#include "core/dist/float_slots.h"

namespace dtrain::dist {
namespace {

enum Slot : std::size_t {
  kMagic = 0,
  kKind = 1,
  kFrom = 2,
  kA = 3,
  kB = 4,
  kValue = 5,  // 2 slots
  kPass = 7,   // 2
  kCount = 9,  // 2
  kUnit = 11,
  kFlags = 12,
  kFirst = 13,  // 2
  kLast = 15,   // 2
};
static_assert(kLast + 2 <= kSbHeaderFloats);

}  // namespace

void EncodeSb(const SbHeader& h, std::span<float, kSbHeaderFloats> out) {
  std::fill(out.begin(), out.end(), 0.0f);
  PutU32(out, kMagic, kSbMagic);
  PutU32(out, kKind, static_cast<std::uint32_t>(h.kind));
  PutU32(out, kFrom, h.from);
  PutU32(out, kA, h.a);
  PutU32(out, kB, h.b);
  PutF64(out, kValue, h.value);
  PutU64(out, kPass, h.pass);
  PutU64(out, kCount, h.count);
  PutU32(out, kUnit, h.unit);
  PutU32(out, kFlags, h.flags);
  PutU64(out, kFirst, h.first);
  PutU64(out, kLast, h.last);
}

Result<SbHeader> DecodeSb(std::span<const float, kSbHeaderFloats> in) {
  if (Status magic = CheckMagic(in, kMagic, kSbMagic, "Sandblaster"); !magic.ok()) return magic;
  SbHeader h;
  h.kind = static_cast<SbKind>(GetU32(in, kKind));
  h.from = GetU32(in, kFrom);
  h.a = GetU32(in, kA);
  h.b = GetU32(in, kB);
  h.value = GetF64(in, kValue);
  h.pass = GetU64(in, kPass);
  h.count = GetU64(in, kCount);
  h.unit = GetU32(in, kUnit);
  h.flags = GetU32(in, kFlags);
  h.first = GetU64(in, kFirst);
  h.last = GetU64(in, kLast);
  return h;
}

Status SendSb(Link& link, const SbHeader& h, std::span<const float> data, Deadline deadline,
              bool reply) {
  std::array<float, kSbHeaderFloats> header;
  EncodeSb(h, header);
  const std::uint32_t tag = reply ? SbReply(h.kind) : SbTag(h.kind);
  if (Status s = link.Send(tag, header, deadline); !s.ok()) return s;
  if (data.empty()) return Status::Ok();
  return link.Send(SbData(tag), data, deadline);
}

Result<SbHeader> RecvAnySb(Link& link, std::uint32_t* tag, Deadline deadline) {
  std::array<float, kSbHeaderFloats> header;
  Result<std::uint32_t> got = link.RecvAnyTag(header, deadline);
  if (!got.ok()) return got.status();
  *tag = got.value();
  if ((*tag & 0xffff0000u) != kSbTagBase || (*tag & kSbDataBit) != 0) {
    return Status::Error(link.peer() + " sent a message that is not a Sandblaster header");
  }
  Result<SbHeader> h = DecodeSb(header);
  if (!h.ok()) return Status::Error(link.peer() + ": " + h.status().message());
  if ((*tag & 0xff7fu) != (SbTag(h.value().kind) & 0xff7fu)) {
    return Status::Error(link.peer() + " sent a header whose tag and kind disagree");
  }
  return h;
}

Result<SbHeader> RecvSb(Link& link, std::uint32_t tag, Deadline deadline) {
  std::uint32_t got = 0;
  Result<SbHeader> h = RecvAnySb(link, &got, deadline);
  if (!h.ok()) return h;
  if (got != tag) return link.TagMismatch(tag, got);
  return h;
}

std::string SbKindName(SbKind kind) {
  switch (kind) {
    case SbKind::kDot: return "dot";
    case SbKind::kAxpy: return "axpy";
    case SbKind::kScale: return "scale";
    case SbKind::kCopy: return "copy";
    case SbKind::kBeginPass: return "begin pass";
    case SbKind::kFinishPass: return "finish pass";
    case SbKind::kLoad: return "load";
    case SbKind::kSnapshot: return "snapshot";
    case SbKind::kFetch: return "fetch";
    case SbKind::kPush: return "push";
    case SbKind::kGoodbye: return "goodbye";
    case SbKind::kReady: return "ready";
    case SbKind::kDone: return "done";
    case SbKind::kPushed: return "pushed";
    case SbKind::kOrder: return "order";
  }
  return "kind " + std::to_string(static_cast<std::uint32_t>(kind));
}

}  // namespace dtrain::dist
