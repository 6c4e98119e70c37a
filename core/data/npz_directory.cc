// FindNpzMember: the zip records numpy.savez writes (PKWARE APPNOTE 4.3.12-4.3.16, 4.5.3).
#include "core/data/npz_directory.h"

#include <algorithm>
#include <string_view>

namespace dtrain::data {
namespace {

constexpr std::uint32_t kEndSignature = 0x06054b50;
constexpr std::uint32_t kZip64EndSignature = 0x06064b50;
constexpr std::uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr std::uint32_t kEntrySignature = 0x02014b50;
constexpr std::uint32_t kLocalSignature = 0x04034b50;
constexpr std::size_t kEndBytes = 22, kLocatorBytes = 20, kZip64EndBytes = 56;
constexpr std::size_t kEntryBytes = 46, kLocalBytes = 30;
constexpr std::uint32_t kSaturated32 = 0xFFFFFFFF;

Status NotNpz(const std::string& what) {
  return Status::Error("not a valid .npz (zip) file: " + what);
}

// Little-endian reads at checked offsets: false when [at, at + n) is not inside the bytes.
class Bytes {
 public:
  explicit Bytes(std::span<const std::uint8_t> b) : b_(b) {}
  bool Has(std::uint64_t at, std::uint64_t n) const {
    return at <= b_.size() && n <= b_.size() - at;
  }
  std::uint64_t Le(std::uint64_t at, int n) const {  // callers checked Has(at, n)
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= std::uint64_t{b_[at + i]} << (8 * i);
    return v;
  }
  std::string_view Text(std::uint64_t at, std::uint64_t n) const {
    return {reinterpret_cast<const char*>(b_.data() + at), n};
  }
  std::size_t size() const { return b_.size(); }

 private:
  std::span<const std::uint8_t> b_;
};

struct Directory {
  std::uint64_t offset = 0, size = 0, entries = 0;
};

// The central directory's place, from the end record (searched backwards past a comment of up to
// 64 KiB) and, where that record's fields are saturated, the zip64 end record.
Result<Directory> FindDirectory(const Bytes& b) {
  if (b.size() < kEndBytes) return NotNpz("too short for a zip end record");
  const std::uint64_t lowest = b.size() > kEndBytes + 0xFFFF ? b.size() - kEndBytes - 0xFFFF : 0;
  std::uint64_t end = b.size() - kEndBytes;
  while (b.Le(end, 4) != kEndSignature) {
    if (end == lowest) return NotNpz("no zip end record");
    --end;
  }
  Directory d{b.Le(end + 16, 4), b.Le(end + 12, 4), b.Le(end + 10, 2)};
  if (d.offset == kSaturated32 || d.size == kSaturated32 || d.entries == 0xFFFF) {
    if (end < kLocatorBytes || b.Le(end - kLocatorBytes, 4) != kZip64LocatorSignature) {
      return NotNpz("a zip64 archive without its zip64 end record locator");
    }
    const std::uint64_t at = b.Le(end - kLocatorBytes + 8, 8);
    if (!b.Has(at, kZip64EndBytes) || b.Le(at, 4) != kZip64EndSignature) {
      return NotNpz("the zip64 end record is missing or outside the file");
    }
    d = Directory{b.Le(at + 48, 8), b.Le(at + 40, 8), b.Le(at + 32, 8)};
  }
  if (!b.Has(d.offset, d.size)) return NotNpz("the central directory lies outside the file");
  return d;
}

// Replaces the saturated sizes and offset of an entry by its zip64 extra field's values.
Status ApplyZip64(const Bytes& b, std::uint64_t extra, std::uint64_t extra_size,
                  std::uint64_t* uncompressed, std::uint64_t* compressed, std::uint64_t* local) {
  std::uint64_t* const fields[] = {uncompressed, compressed, local};
  for (std::uint64_t at = extra; at + 4 <= extra + extra_size;) {
    const std::uint64_t id = b.Le(at, 2), size = b.Le(at + 2, 2);
    if (at + 4 + size > extra + extra_size) break;
    if (id == 1) {
      std::uint64_t next = at + 4;
      for (std::uint64_t* field : fields) {
        if (*field != kSaturated32) continue;
        if (next + 8 > at + 4 + size) return NotNpz("a zip64 extra field is too short");
        *field = b.Le(next, 8);
        next += 8;
      }
      return Status::Ok();
    }
    at += 4 + size;
  }
  if (*uncompressed == kSaturated32 || *compressed == kSaturated32 || *local == kSaturated32) {
    return NotNpz("an entry's sizes need a zip64 extra field it lacks");
  }
  return Status::Ok();
}

}  // namespace

Result<NpzMember> FindNpzMember(std::span<const std::uint8_t> archive, const std::string& name) {
  const Bytes b(archive);
  Result<Directory> dir = FindDirectory(b);
  if (!dir.ok()) return dir.status();
  const std::string wanted = name + ".npy";
  std::uint64_t at = dir.value().offset;
  const std::uint64_t end = at + dir.value().size;
  for (std::uint64_t i = 0; i < dir.value().entries; ++i) {
    if (at > end || !b.Has(at, kEntryBytes) || end - at < kEntryBytes ||
        b.Le(at, 4) != kEntrySignature) {
      return NotNpz("a central directory entry is malformed or outside the directory");
    }
    const std::uint64_t name_size = b.Le(at + 28, 2), extra_size = b.Le(at + 30, 2);
    const std::uint64_t entry_size = kEntryBytes + name_size + extra_size + b.Le(at + 32, 2);
    if (end - at < entry_size) return NotNpz("a central directory entry runs past the directory");
    if (b.Text(at + kEntryBytes, name_size) != wanted) {
      at += entry_size;
      continue;
    }
    const std::string member = "its array '" + name + "'";
    if ((b.Le(at + 8, 2) & 1) != 0) return Status::Error(member + " is encrypted");
    if (b.Le(at + 10, 2) != 0) {
      return Status::Error(member + " is compressed (numpy.savez_compressed): only arrays stored " +
                           "uncompressed (numpy.savez) are read, in place");
    }
    std::uint64_t uncompressed = b.Le(at + 24, 4), compressed = b.Le(at + 20, 4);
    std::uint64_t local = b.Le(at + 42, 4);
    if (Status s = ApplyZip64(b, at + kEntryBytes + name_size, extra_size, &uncompressed,
                              &compressed, &local);
        !s.ok()) {
      return s;
    }
    if (uncompressed != compressed) return NotNpz(member + " is stored with two different sizes");
    if (!b.Has(local, kLocalBytes) || b.Le(local, 4) != kLocalSignature) {
      return NotNpz(member + " has no local header where its directory entry says");
    }
    const std::uint64_t data = local + kLocalBytes + b.Le(local + 26, 2) + b.Le(local + 28, 2);
    if (!b.Has(data, compressed)) {
      return Status::Error(member + " is truncated: its data runs past the end of the file");
    }
    return NpzMember{data, compressed};
  }
  return Status::Error("has no array '" + name + "' (no member " + wanted + ")");
}

}  // namespace dtrain::data
