// The header of a NumPy .npy file (format versions 1.0, 2.0 and 3.0), parsed from bytes alone:
// the magic "\x93NUMPY", the version, the header length, and the Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (60000, 784), }
// that NumPy writes. A pure function so it can be fuzzed (tests/fuzz/npy_header_fuzz.cc).
//
//   Result<NpyHeader> h = ParseNpyHeader(first_bytes);   // the file's first bytes (any number)
//   if (h.ok()) ... h.value().data_offset, h.value().DataBytes() ...
//
// Accepted: little-endian (or one-byte) integers, unsigned integers and floats of 1, 2, 4 or 8
// bytes ('<f4', '<f8', '|u1', '<i8', ...) in C order. Refused, with the reason: another magic or
// version, a truncated or malformed header, a dict without exactly the keys descr, fortran_order
// and shape, big-endian data ('>f4'), other dtypes (structured, complex, strings, objects),
// fortran_order True, a shape whose element count or byte size overflows 64 bits. Messages name
// what was wrong and may quote the header's own fields (its dtype), never bytes outside it.
//
// NpyHeaderBytes writes the header of a version 1.0 file, as numpy.save does (the dict padded
// with spaces and a newline to a multiple of 64 bytes); ParseNpyHeader reads it back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace dtrain::data {

enum class NpyKind { kSigned, kUnsigned, kFloat };

struct NpyDtype {
  NpyKind kind = NpyKind::kFloat;
  int bytes = 4;  // 1, 2, 4 or 8 (floats: 4 or 8)
  bool operator==(const NpyDtype&) const = default;
};

struct NpyHeader {
  int major_version = 1;  // 1, 2 or 3
  NpyDtype dtype;
  std::vector<std::uint64_t> shape;  // () for a scalar: one element
  std::uint64_t data_offset = 0;     // where the array's bytes start, from the file's start

  std::uint64_t Elements() const;  // the product of shape (checked not to overflow when parsed)
  std::uint64_t DataBytes() const { return Elements() * static_cast<std::uint64_t>(dtype.bytes); }
};

// The header at the start of `bytes`, or what is wrong with it. `bytes` may hold more than the
// header (the data that follows is not looked at) or less (a truncated header is an error).
Result<NpyHeader> ParseNpyHeader(std::span<const std::uint8_t> bytes);

// The header of a version 1.0 .npy file of `dtype` and `shape` in C order, to be followed by the
// array's little-endian bytes (the header's data_offset is its size).
std::string NpyHeaderBytes(NpyDtype dtype, std::span<const std::uint64_t> shape);

// "float32", "int64", "uint8": NumPy's name of a dtype, for messages.
std::string NpyDtypeName(NpyDtype dtype);

}  // namespace dtrain::data
