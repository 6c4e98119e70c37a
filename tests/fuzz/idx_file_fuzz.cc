// Fuzz target: the IDX image reader (core/data/readers.h ReadIdx and ReadIdxShape) over the file
// reader under it (core/codec/gzip_or_plain_file.h: gzip members inflated by ISA-L, or plain
// bytes). Each input is an image file, handed over as an in-memory file (memfd), unlabelled.
// Invariants: no crash, no leak, no allocation of a size the input does not hold (beyond the
// reader's first chunk); a file that reads holds exactly rows x features pixels, and its shape
// agrees with ReadIdxShape.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/data/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd_create("idx", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  for (std::size_t done = 0; done < size;) {
    const ssize_t wrote = write(fd, data + done, size - done);
    if (wrote <= 0) std::abort();
    done += static_cast<std::size_t>(wrote);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const auto read = dtrain::data::ReadIdx(path, "");
  const auto shape = dtrain::data::ReadIdxShape(path, "");
  if (read.ok()) {
    const dtrain::data::Dataset& d = read.value();
    if (d.bytes.size() != d.rows * d.features) std::abort();
    if (!shape.ok() || shape.value().rows != d.rows || shape.value().features != d.features) {
      std::abort();
    }
  }
  close(fd);
  return 0;
}
