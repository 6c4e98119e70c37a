// LineCutter: turns a process's output, read in chunks of any size, into lines of at most `max`
// bytes of its text. A longer line keeps its first `max` bytes (backed off to the start of a
// UTF-8 character) and ends with CutNotice of how many it lost, so a reader sees it was cut.
//
//   LineCutter cut(4096);
//   cut.Feed(chunk, [](std::string_view line) { store(line); });   // per chunk read
//   cut.Finish(sink);                                               // at EOF: an unended line
//
// Invariant: it holds at most `max` bytes, whatever it is fed (a line of 1 GiB costs no more
// memory than one of `max`); a line handed out is at most `max` + the notice's length. One
// thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace dtrain::server {

// " ... [line cut: N bytes dropped]".
std::string CutNotice(std::uint64_t dropped);

class LineCutter {
 public:
  using Sink = std::function<void(std::string_view line)>;

  explicit LineCutter(std::size_t max) : max_(max) {}

  // Every line `chunk` ends, in order; the rest waits for the next chunk.
  void Feed(std::string_view chunk, const Sink& sink);
  // The last line when the output ended without a newline; nothing otherwise.
  void Finish(const Sink& sink);

 private:
  void Emit(const Sink& sink);

  std::size_t max_;
  std::string kept_;           // the current line's first bytes, at most max_
  std::uint64_t dropped_ = 0;  // its bytes past those
};

}  // namespace dtrain::server
