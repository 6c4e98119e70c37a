#include "core/dist/float_slots.h"

#include <cstdio>
#include <string>

namespace dtrain::dist {

Status CheckMagic(std::span<const float> in, std::size_t slot, std::uint32_t magic,
                  std::string_view what) {
  const std::uint32_t got = GetU32(in, slot);
  if (got == magic) return Status::Ok();
  char buf[48];
  std::snprintf(buf, sizeof buf, " header: magic 0x%08x, not 0x%08x", got, magic);
  return Status::Error("bad " + std::string(what) + buf);
}

}  // namespace dtrain::dist
