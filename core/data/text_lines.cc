#include "core/data/text_lines.h"

#include <sys/types.h>  // ssize_t, returned by POSIX getline
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/codec/regular_file.h"
#include "core/unique_fd.h"

namespace dtrain::data::text {
namespace {

// Parses all of `text` as a float (an optional leading '+' is allowed; "inf"/"nan" parse too).
bool ParseFloat(std::string_view text, float* value) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

LineReader::LineReader(const std::string& path) : path_(path) {
  Result<int> fd = codec::OpenRegularFile(path);
  if (!fd.ok()) {
    open_status_ = Error("cannot open: " + fd.status().message());
    return;
  }
  UniqueFd owned(fd.value());
  file_ = ::fdopen(owned.get(), "r");
  if (file_ == nullptr) {
    open_status_ = Error(std::string("cannot open: ") + std::strerror(errno));
    return;
  }
  owned.release();  // the FILE's now
}

LineReader::LineReader(const std::string& path, std::uint64_t offset, std::uint64_t bytes,
                       std::uint64_t first_line)
    : LineReader(path) {
  if (file_ == nullptr) return;
  errno = 0;
  if (::fseeko(file_, static_cast<off_t>(offset), SEEK_SET) != 0) {
    open_status_ = Error(std::string("cannot seek: ") + std::strerror(errno));
    return;
  }
  offset_ = offset;
  end_ = offset + bytes;
  line_number_ = first_line - 1;
}

LineReader::~LineReader() {
  std::free(buffer_);
  if (file_ != nullptr) std::fclose(file_);
}

std::size_t LineReader::CountLines() {
  char chunk[1 << 16];
  std::size_t lines = 0;
  char last = '\n';
  for (std::size_t got; (got = std::fread(chunk, 1, sizeof(chunk), file_)) > 0;) {
    lines += static_cast<std::size_t>(std::count(chunk, chunk + got, '\n'));
    last = chunk[got - 1];
  }
  std::rewind(file_);  // also clears a read error; Next() meets it again and reports it
  return lines + (last != '\n' ? 1 : 0);
}

bool LineReader::Next(std::string_view* line) {
  if (offset_ >= end_) return false;
  const ssize_t got = ::getline(&buffer_, &capacity_, file_);
  if (got < 0) return false;
  ++line_number_;
  offset_ += static_cast<std::uint64_t>(got);
  std::size_t size = static_cast<std::size_t>(got);
  if (size > 0 && buffer_[size - 1] == '\n') --size;
  if (size > 0 && buffer_[size - 1] == '\r') --size;
  *line = std::string_view(buffer_, size);
  return true;
}

Status LineReader::EndStatus() const {
  if (std::ferror(file_)) return Error(std::string("read error: ") + std::strerror(errno));
  return Status::Ok();
}

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

std::string_view NextToken(std::string_view& rest) {
  while (!rest.empty() && IsBlank(rest.front())) rest.remove_prefix(1);
  std::size_t end = 0;
  while (end < rest.size() && !IsBlank(rest[end])) ++end;
  const std::string_view token = rest.substr(0, end);
  rest.remove_prefix(end);
  return token;
}

std::string NumberProblem(std::string_view text, float* value) {
  if (text.empty()) return "missing number";
  if (!ParseFloat(text, value)) return "not a number";
  if (!std::isfinite(*value)) return "not a finite number";
  return {};
}

std::string LabelRule::Check(float label, const std::string& where) {
  if (!classification_) return {};
  if (label != std::floor(label)) return "class label is not an integer";
  if (std::fabs(label) > kMaxClassLabel) {
    return "class label is larger than " + std::to_string(static_cast<int>(kMaxClassLabel));
  }
  if (label != 1.0f && label != -1.0f) only_plus_minus_one_ = false;
  if (label < 0.0f && first_negative_.empty()) {
    first_negative_ = where + ": class label is negative";
  }
  return {};
}

Result<int> LabelRule::Finish(std::vector<float>& labels, const std::string& path) const {
  if (!classification_) return 0;
  if (!first_negative_.empty()) {
    if (!only_plus_minus_one_) {
      return Status::Error(path + ": " + first_negative_ +
                           " (class labels must be non-negative integers, or all -1/+1)");
    }
    MapToZeroOne(labels);
  }
  return 1 + static_cast<int>(*std::max_element(labels.begin(), labels.end()));
}

void LabelRule::MapToZeroOne(std::vector<float>& labels) {
  for (float& label : labels) label = label > 0.0f ? 1.0f : 0.0f;
}

}  // namespace dtrain::data::text
