#include "daemon/server/line_cutter.h"

namespace dtrain::server {
namespace {

// The bytes of a UTF-8 character that `lead` starts; 1 for any other byte.
std::size_t CharacterLength(unsigned char lead) {
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

// The bytes at the end of `text` that start a UTF-8 character it does not hold whole.
std::size_t UnfinishedTail(std::string_view text) {
  for (std::size_t back = 1; back <= 4 && back <= text.size(); ++back) {
    const auto byte = static_cast<unsigned char>(text[text.size() - back]);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte: its lead is further back
    return CharacterLength(byte) > back ? back : 0;
  }
  return 0;
}

}  // namespace

std::string CutNotice(std::uint64_t dropped) {
  return " ... [line cut: " + std::to_string(dropped) + " bytes dropped]";
}

void LineCutter::Feed(std::string_view chunk, const Sink& sink) {
  while (!chunk.empty()) {
    const std::size_t newline = chunk.find('\n');
    const std::string_view part = chunk.substr(0, newline);
    if (dropped_ > 0) {
      dropped_ += part.size();
    } else if (part.size() <= max_ - kept_.size()) {
      kept_.append(part);
    } else {
      const std::size_t take = max_ - kept_.size();
      kept_.append(part.substr(0, take));
      const std::size_t unfinished = UnfinishedTail(kept_);
      kept_.resize(kept_.size() - unfinished);
      dropped_ = part.size() - take + unfinished;
    }
    if (newline == std::string_view::npos) return;
    Emit(sink);
    chunk.remove_prefix(newline + 1);
  }
}

void LineCutter::Finish(const Sink& sink) {
  if (!kept_.empty() || dropped_ > 0) Emit(sink);
}

void LineCutter::Emit(const Sink& sink) {
  if (dropped_ > 0) kept_ += CutNotice(dropped_);
  sink(kept_);
  kept_.clear();
  dropped_ = 0;
}

}  // namespace dtrain::server
