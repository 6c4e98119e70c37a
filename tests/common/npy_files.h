// NumPy test data: the bytes of a handmade .npy file (any header dict, any version) and of a .npz
// archive of such members, stored or marked deflated, as numpy.save and numpy.savez write them.
//
//   dir.Write("x.npy", NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
//                               FloatBytes({1, 2, 3, 4, 5, 6})));
//   dir.Write("t.npz", NpzBytes({{"x", x_npy}, {"y", y_npy}}));
//
// Pure functions.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace dtrain::testing {

// The magic, version `major`.0, the header length and `dict` padded with spaces and a newline
// to a multiple of 64 bytes (as NumPy pads), then `data`.
inline std::string NpyBytes(const std::string& dict, const std::string& data, int major = 1) {
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  while ((10 + (length_bytes - 2) + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  for (std::size_t i = 0; i < length_bytes; ++i) {
    out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
  }
  return out + header + data;
}

// The header dict NumPy writes for `descr` and `shape` ("(3, 4)", "(5,)").
inline std::string NpyDict(const std::string& descr, const std::string& shape) {
  return "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
}

// The little-endian bytes of values of type T.
template <typename T>
std::string ValueBytes(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// A zip archive of members "<name>.npy" with the given bytes: stored, or marked deflated
// (method 8, the bytes left as they are: enough for a reader that refuses such members).
inline std::string NpzBytes(const std::vector<std::pair<std::string, std::string>>& members,
                            bool deflated = false) {
  std::string out, directory;
  const auto put = [](std::string& s, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  };
  for (const auto& [name, bytes] : members) {
    const std::string file = name + ".npy";
    const std::uint64_t local = out.size();
    put(out, 0x04034b50, 4);
    put(out, 20, 2);                // version needed
    put(out, 0, 2);                 // flags
    put(out, deflated ? 8 : 0, 2);  // method
    put(out, 0, 4);                 // time, date
    put(out, 0, 4);                 // CRC-32 (not checked)
    put(out, bytes.size(), 4);      // compressed size
    put(out, bytes.size(), 4);      // uncompressed size
    put(out, file.size(), 2);
    put(out, 0, 2);  // extra
    out += file + bytes;
    put(directory, 0x02014b50, 4);
    put(directory, 20, 2);
    put(directory, 20, 2);
    put(directory, 0, 2);
    put(directory, deflated ? 8 : 0, 2);
    put(directory, 0, 4);
    put(directory, 0, 4);
    put(directory, bytes.size(), 4);
    put(directory, bytes.size(), 4);
    put(directory, file.size(), 2);
    put(directory, 0, 2);  // extra
    put(directory, 0, 2);  // comment
    put(directory, 0, 2);  // disk
    put(directory, 0, 2);  // internal attributes
    put(directory, 0, 4);  // external attributes
    put(directory, local, 4);
    directory += file;
  }
  const std::uint64_t directory_offset = out.size();
  out += directory;
  put(out, 0x06054b50, 4);
  put(out, 0, 4);  // disks
  put(out, members.size(), 2);
  put(out, members.size(), 2);
  put(out, directory.size(), 4);
  put(out, directory_offset, 4);
  put(out, 0, 2);  // comment
  return out;
}

}  // namespace dtrain::testing
