// GzipOrPlainFile: a file read front to back as bytes, gunzipped on the way when it starts with
// the gzip magic (ISA-L's inflate, about twice as fast as zlib's on Fashion-MNIST), read as it is
// otherwise. gzip members written one after another are read as one stream, and each member's
// CRC-32 and length are checked against its trailer.
//
//   Result<GzipOrPlainFile> f = GzipOrPlainFile::Open(path);
//   Result<std::size_t> got = f.value().Read(buffer, n);   // n bytes, fewer only at the end
//
// Errors say what went wrong, not where: callers put the path in front (messages never quote the
// file's content). A gzip stream that stops before its last member's trailer is an error whose
// message starts with "truncated". One thread at a time per object.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/unique_fd.h"

struct inflate_state;

namespace dtrain::codec {

class GzipOrPlainFile {
 public:
  static Result<GzipOrPlainFile> Open(const std::string& path);

  GzipOrPlainFile(GzipOrPlainFile&&) noexcept;
  GzipOrPlainFile& operator=(GzipOrPlainFile&&) noexcept;
  ~GzipOrPlainFile();

  // Reads up to n bytes of the (decompressed) content into dst; fewer only at its end.
  Result<std::size_t> Read(void* dst, std::size_t n);

 private:
  struct InflateDeleter {
    void operator()(inflate_state* state) const;
  };

  explicit GzipOrPlainFile(int fd) : fd_(fd) {}
  Result<std::size_t> ReadPlain(unsigned char* dst, std::size_t n);
  Result<std::size_t> ReadGzip(unsigned char* dst, std::size_t n);
  // Tops up the compressed input once it is used up; false at the end of the file.
  Result<bool> Refill();
  // After a member's trailer: starts the next member, or finds the end of the file.
  Status NextMember();
  Status Sniff();  // at Open: reads the first bytes and decides between gzip and plain

  UniqueFd fd_;
  bool at_end_ = false;  // the last gzip member's trailer has been read
  std::vector<unsigned char> input_;  // read ahead of the inflater (or of a plain Read)
  std::size_t input_begin_ = 0, input_end_ = 0;
  std::unique_ptr<inflate_state, InflateDeleter> inflate_;  // null for a plain file
};

}  // namespace dtrain::codec
