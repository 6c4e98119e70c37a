// ParseNpyHeader: the magic, version, length and dict of a .npy header (npy_header.h).
#include "core/data/npy_header.h"

#include <cctype>
#include <limits>
#include <optional>
#include <string_view>

namespace dtrain::data {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
// NumPy itself refuses headers over 10000 bytes unless told otherwise; this bound only keeps a
// corrupt length from naming the whole file as header.
constexpr std::uint64_t kMaxHeaderBytes = std::uint64_t{1} << 20;

Status NotNpyHeader(const std::string& what) {
  return Status::Error("not a valid .npy header: " + what);
}

constexpr const char* kNotPlainDtype =
    "'descr' is not a plain dtype such as '<f4' (structured and string dtypes are not supported)";

// A cursor over the dict literal; every Expect/Read skips the blanks in front of it.
class DictText {
 public:
  explicit DictText(std::string_view text) : text_(text) {}

  void SkipBlanks() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r')) {
      ++at_;
    }
  }
  bool AtEnd() {
    SkipBlanks();
    return at_ == text_.size();
  }
  // Consumes `c` if it is next.
  bool Take(char c) {
    SkipBlanks();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  bool TakeWord(std::string_view word) {
    SkipBlanks();
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }
  // A Python string literal in single or double quotes, without escapes.
  std::optional<std::string_view> String() {
    SkipBlanks();
    if (at_ >= text_.size() || (text_[at_] != '\'' && text_[at_] != '"')) return std::nullopt;
    const char quote = text_[at_];
    const std::size_t end = text_.find(quote, at_ + 1);
    if (end == std::string_view::npos) return std::nullopt;
    std::string_view s = text_.substr(at_ + 1, end - at_ - 1);
    if (s.find('\\') != std::string_view::npos) return std::nullopt;
    at_ = end + 1;
    return s;
  }
  // A non-negative decimal integer (Python 2's "L" suffix allowed) that fits 64 bits.
  std::optional<std::uint64_t> Integer() {
    SkipBlanks();
    std::uint64_t value = 0;
    const std::size_t start = at_;
    while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_])) != 0) {
      const auto digit = static_cast<std::uint64_t>(text_[at_] - '0');
      if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
      value = value * 10 + digit;
      ++at_;
    }
    if (at_ == start) return std::nullopt;
    if (at_ < text_.size() && text_[at_] == 'L') ++at_;
    return value;
  }

 private:
  std::string_view text_;
  std::size_t at_ = 0;
};

// A descr such as '<f4': the byte order, the kind and the size. Only its own well-formed text is
// ever quoted back.
Result<NpyDtype> ParseDescr(std::string_view descr) {
  const bool simple = descr.size() >= 3 && descr.size() <= 4 &&
                      std::string_view("<>|=").find(descr[0]) != std::string_view::npos &&
                      std::isalpha(static_cast<unsigned char>(descr[1])) != 0 &&
                      std::isdigit(static_cast<unsigned char>(descr[2])) != 0 &&
                      (descr.size() == 3 || std::isdigit(static_cast<unsigned char>(descr[3])));
  if (!simple) return NotNpyHeader(kNotPlainDtype);
  std::string quoted;  // built by appending: GCC 12 gives a false -Wrestrict for "'" + ...
  quoted.append(1, '\'').append(descr).append(1, '\'');
  NpyDtype dtype;
  switch (descr[1]) {
    case 'f':
      dtype.kind = NpyKind::kFloat;
      break;
    case 'i':
      dtype.kind = NpyKind::kSigned;
      break;
    case 'u':
    case 'b':  // bool: one byte, 0 or 1
      dtype.kind = NpyKind::kUnsigned;
      break;
    default:
      return Status::Error("dtype " + quoted +
                           " is not supported: features must be float32, float64 or uint8, "
                           "labels integers or floats");
  }
  const int bytes = descr.size() == 3 ? descr[2] - '0' : (descr[2] - '0') * 10 + (descr[3] - '0');
  const bool floats = dtype.kind == NpyKind::kFloat;
  if ((floats && bytes != 4 && bytes != 8) ||
      (!floats && bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) ||
      (descr[1] == 'b' && bytes != 1)) {
    return Status::Error("dtype " + quoted + " is not supported (its size is not one NumPy " +
                         "writes for that kind, or is half or extended precision)");
  }
  dtype.bytes = bytes;
  if (bytes > 1 && descr[0] == '>') {
    return Status::Error("dtype " + quoted +
                         " is big-endian: only little-endian data is read (convert it with "
                         "array.astype(array.dtype.newbyteorder('<')))");
  }
  if (bytes > 1 && descr[0] != '<') {
    return Status::Error("dtype " + quoted +
                         " has no stated byte order: only '<' (little-endian) "
                         "is read");
  }
  return dtype;
}

// The shape tuple: "()", "(5,)", "(3, 4)", "(3, 4,)".
std::optional<std::vector<std::uint64_t>> ParseShape(DictText& t) {
  if (!t.Take('(')) return std::nullopt;
  std::vector<std::uint64_t> shape;
  if (t.Take(')')) return shape;
  while (true) {
    std::optional<std::uint64_t> dim = t.Integer();
    if (!dim || shape.size() >= 32) return std::nullopt;  // NumPy's limit is 32 (64 since 2.0)
    shape.push_back(*dim);
    const bool comma = t.Take(',');
    if (t.Take(')')) {
      if (shape.size() == 1 && !comma) return std::nullopt;  // "(5)" is not a tuple
      return shape;
    }
    if (!comma) return std::nullopt;
  }
}

Result<NpyHeader> ParseDict(std::string_view text, NpyHeader header) {
  DictText t(text);
  if (!t.Take('{')) return NotNpyHeader("the header is not a dict");
  bool descr = false, order = false, shape = false;
  while (!t.Take('}')) {
    std::optional<std::string_view> key = t.String();
    if (!key) return NotNpyHeader("a key of the header's dict is not a plain string");
    if (!t.Take(':')) return NotNpyHeader("a key of the header's dict has no ':' after it");
    if (*key == "descr" && !descr) {
      std::optional<std::string_view> value = t.String();
      if (!value) return NotNpyHeader(kNotPlainDtype);
      Result<NpyDtype> dtype = ParseDescr(*value);
      if (!dtype.ok()) return dtype.status();
      header.dtype = dtype.value();
      descr = true;
    } else if (*key == "fortran_order" && !order) {
      if (t.TakeWord("True")) {
        return Status::Error(
            "the array is in Fortran (column-major) order: only C order is read "
            "(save numpy.ascontiguousarray(array))");
      }
      if (!t.TakeWord("False")) return NotNpyHeader("'fortran_order' is neither True nor False");
      order = true;
    } else if (*key == "shape" && !shape) {
      std::optional<std::vector<std::uint64_t>> dims = ParseShape(t);
      if (!dims) return NotNpyHeader("'shape' is not a tuple of non-negative integers");
      header.shape = std::move(*dims);
      shape = true;
    } else {
      return NotNpyHeader(
          "its dict has a key other than 'descr', 'fortran_order' and 'shape', or one of "
          "them twice");
    }
    if (!t.Take(',')) {
      if (!t.Take('}')) return NotNpyHeader("the header's dict is not closed");
      break;
    }
  }
  if (!t.AtEnd()) return NotNpyHeader("text follows the header's dict");
  if (!descr || !order || !shape) {
    return NotNpyHeader("its dict lacks one of 'descr', 'fortran_order' and 'shape'");
  }
  std::uint64_t elements = 1;
  for (std::uint64_t d : header.shape) {
    if (d != 0 && elements > std::numeric_limits<std::uint64_t>::max() / d) {
      return NotNpyHeader("the shape holds more than 2^64 elements");
    }
    elements *= d;
  }
  if (elements > std::numeric_limits<std::uint64_t>::max() / 8 - header.data_offset) {
    return NotNpyHeader("the shape holds more bytes than a file can");
  }
  return header;
}

}  // namespace

std::uint64_t NpyHeader::Elements() const {
  std::uint64_t n = 1;
  for (std::uint64_t d : shape) n *= d;
  return n;
}

std::string NpyDtypeName(NpyDtype dtype) {
  const char* kind = dtype.kind == NpyKind::kFloat    ? "float"
                     : dtype.kind == NpyKind::kSigned ? "int"
                                                      : "uint";
  return kind + std::to_string(8 * dtype.bytes);
}

std::string NpyHeaderBytes(NpyDtype dtype, std::span<const std::uint64_t> shape) {
  const char kind = dtype.kind == NpyKind::kFloat    ? 'f'
                    : dtype.kind == NpyKind::kSigned ? 'i'
                                                     : 'u';
  std::string dict = "{'descr': '";
  dict.append(1, dtype.bytes == 1 ? '|' : '<').append(1, kind).append(std::to_string(dtype.bytes));
  dict += "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) dict += ", ";
    dict += std::to_string(shape[i]);
  }
  if (shape.size() == 1) dict += ",";  // "(5,)": a tuple of one
  dict += "), }";
  // The magic, the version, the two length bytes and the dict end in a newline on a 64-byte line.
  const std::size_t fixed = kMagic.size() + 4;
  dict.append((64 - (fixed + dict.size() + 1) % 64) % 64, ' ');
  dict.push_back('\n');
  std::string out(kMagic);
  out.push_back('\x01');
  out.push_back('\0');
  out.push_back(static_cast<char>(dict.size() & 0xFF));
  out.push_back(static_cast<char>(dict.size() >> 8));
  return out + dict;
}

Result<NpyHeader> ParseNpyHeader(std::span<const std::uint8_t> bytes) {
  const std::string_view all(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (all.size() < kMagic.size() || all.substr(0, kMagic.size()) != kMagic) {
    return Status::Error("not a .npy file: it does not start with NumPy's magic string");
  }
  if (all.size() < 8) return NotNpyHeader("truncated before the format version");
  NpyHeader header;
  header.major_version = bytes[6];
  if (header.major_version < 1 || header.major_version > 3 || bytes[7] != 0) {
    return NotNpyHeader("format version " + std::to_string(bytes[6]) + "." +
                        std::to_string(bytes[7]) + " is not one of 1.0, 2.0 and 3.0");
  }
  const std::size_t length_bytes = header.major_version == 1 ? 2 : 4;
  if (all.size() < 8 + length_bytes) return NotNpyHeader("truncated before the header length");
  std::uint64_t length = 0;
  for (std::size_t i = 0; i < length_bytes; ++i) {
    length |= std::uint64_t{bytes[8 + i]} << (8 * i);
  }
  if (length > kMaxHeaderBytes) {
    return NotNpyHeader("the header length is " + std::to_string(length) + " bytes, more than " +
                        std::to_string(kMaxHeaderBytes));
  }
  header.data_offset = 8 + length_bytes + length;
  if (all.size() < header.data_offset) {
    return NotNpyHeader("truncated: the header declares " + std::to_string(length) + " bytes, " +
                        std::to_string(all.size() - 8 - length_bytes) + " present");
  }
  return ParseDict(all.substr(8 + length_bytes, length), std::move(header));
}

}  // namespace dtrain::data
