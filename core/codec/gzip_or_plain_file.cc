#include "core/codec/gzip_or_plain_file.h"

#include <isa-l/igzip_lib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "core/codec/regular_file.h"

namespace dtrain::codec {
namespace {

constexpr std::size_t kInputBytes = std::size_t{1} << 18;
constexpr std::size_t kMaxOutputPerCall = std::size_t{1} << 30;  // avail_out is 32 bits
constexpr unsigned char kGzipMagic[2] = {0x1f, 0x8b};

std::string InflateError(int code) {
  switch (code) {
    case ISAL_INVALID_WRAPPER:
      return "not a valid gzip header";
    case ISAL_UNSUPPORTED_METHOD:
      return "a gzip compression method other than deflate";
    case ISAL_INCORRECT_CHECKSUM:
      return "damaged: the gzip checksum does not match the content";
    default:
      return "damaged: invalid gzip (deflate) data";
  }
}

// read(2) until n bytes or the end of the file.
Result<std::size_t> ReadFully(int fd, unsigned char* dst, std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::read(fd, dst + done, n - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Status::Error(std::string("read error: ") + std::strerror(errno));
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

}  // namespace

void GzipOrPlainFile::InflateDeleter::operator()(inflate_state* state) const { delete state; }

Result<GzipOrPlainFile> GzipOrPlainFile::Open(const std::string& path) {
  Result<int> fd = OpenRegularFile(path);
  if (!fd.ok()) return Status::Error("cannot open: " + fd.status().message());
  GzipOrPlainFile file(fd.value());
  if (Status s = file.Sniff(); !s.ok()) return s;
  return file;
}

GzipOrPlainFile::GzipOrPlainFile(GzipOrPlainFile&& other) noexcept = default;
GzipOrPlainFile& GzipOrPlainFile::operator=(GzipOrPlainFile&& other) noexcept = default;
GzipOrPlainFile::~GzipOrPlainFile() = default;

Result<std::size_t> GzipOrPlainFile::Read(void* dst, std::size_t n) {
  auto* out = static_cast<unsigned char*>(dst);
  return inflate_ ? ReadGzip(out, n) : ReadPlain(out, n);
}

Status GzipOrPlainFile::Sniff() {
  input_.resize(kInputBytes);
  Result<std::size_t> got = ReadFully(fd_.get(), input_.data(), sizeof(kGzipMagic));
  if (!got.ok()) return got.status();
  input_end_ = got.value();
  if (input_end_ < sizeof(kGzipMagic) ||
      std::memcmp(input_.data(), kGzipMagic, sizeof(kGzipMagic)) != 0) {
    return Status::Ok();  // plain: the sniffed bytes are the first of the content
  }
  inflate_.reset(new inflate_state{});
  isal_inflate_init(inflate_.get());
  inflate_->crc_flag = ISAL_GZIP;
  inflate_->next_in = input_.data();
  inflate_->avail_in = static_cast<std::uint32_t>(input_end_);
  return Status::Ok();
}

Result<std::size_t> GzipOrPlainFile::ReadPlain(unsigned char* dst, std::size_t n) {
  const std::size_t buffered = std::min(n, input_end_ - input_begin_);
  std::copy_n(input_.data() + input_begin_, buffered, dst);
  input_begin_ += buffered;
  Result<std::size_t> rest = ReadFully(fd_.get(), dst + buffered, n - buffered);
  if (!rest.ok()) return rest.status();
  return buffered + rest.value();
}

Result<bool> GzipOrPlainFile::Refill() {
  Result<std::size_t> got = ReadFully(fd_.get(), input_.data(), input_.size());
  if (!got.ok()) return got.status();
  inflate_->next_in = input_.data();
  inflate_->avail_in = static_cast<std::uint32_t>(got.value());
  return got.value() != 0;
}

Status GzipOrPlainFile::NextMember() {
  inflate_state& state = *inflate_;
  if (state.avail_in == 0) {
    Result<bool> more = Refill();
    if (!more.ok()) return more.status();
    if (!more.value()) {
      at_end_ = true;
      return Status::Ok();
    }
  }
  if (state.next_in[0] != kGzipMagic[0]) {
    return Status::Error("unexpected data after the end of the gzip stream");
  }
  std::uint8_t* const next_in = state.next_in;
  const std::uint32_t avail_in = state.avail_in;
  isal_inflate_reset(&state);
  state.crc_flag = ISAL_GZIP;
  state.next_in = next_in;
  state.avail_in = avail_in;
  return Status::Ok();
}

Result<std::size_t> GzipOrPlainFile::ReadGzip(unsigned char* dst, std::size_t n) {
  inflate_state& state = *inflate_;
  std::size_t done = 0;
  while (done < n && !at_end_) {
    state.next_out = dst + done;
    state.avail_out = static_cast<std::uint32_t>(std::min(n - done, kMaxOutputPerCall));
    const std::uint32_t room = state.avail_out, avail_in = state.avail_in;
    const int code = isal_inflate(&state);
    if (code < 0) return Status::Error(InflateError(code));
    done += room - state.avail_out;
    if (state.block_state == ISAL_BLOCK_FINISH) {
      if (Status s = NextMember(); !s.ok()) return s;
      continue;
    }
    if (state.avail_in == 0) {
      Result<bool> more = Refill();
      if (!more.ok()) return more.status();
      if (!more.value()) return Status::Error("truncated: the gzip stream ends before its trailer");
    } else if (state.avail_out == room && state.avail_in == avail_in) {
      return Status::Error(InflateError(ISAL_INVALID_BLOCK));  // no progress: never loop on it
    }
  }
  return done;
}

}  // namespace dtrain::codec
