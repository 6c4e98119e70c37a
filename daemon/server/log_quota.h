// LogQuota: how much of one job attempt's output the store keeps. Each line costs its bytes and
// kRowCost (about what a row of the store adds to them, so that the quota bounds the disk the
// lines take, short ones too). Lines are kept until their costs add up to `bytes`; from the
// first that would pass it on, every line is dropped and counted. A drop that is due a note (the
// first, then the 1000th, 10000th, ... so that the count so far shows) says kNote, and the caller
// records Note(); when the attempt ends, it records SummaryLine().
//
//   LogQuota quota(64 << 20);
//   switch (quota.Admit(line.size())) { case LogQuota::kKeep: store(line); break; ... }
//   if (quota.dropped_lines() > 0) store(quota.SummaryLine());
//
// Invariant: the costs of the lines kept never exceed `bytes`; once one line is dropped, all
// later ones are (a log has one gap, at its end, never holes); fewer than 20 notes. One
// thread at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace dtrain::server {

class LogQuota {
 public:
  enum Verdict { kKeep, kDropped, kNote };
  static constexpr std::uint64_t kRowCost = 128;

  // `scope` says whose lines the quota counts, in its first note ("this attempt"); `reached`
  // starts its notes; `used`: the cost of lines kept before it (stored earlier), so that the
  // quota bounds them too.
  explicit LogQuota(std::uint64_t bytes, std::string scope = "this attempt",
                    std::string reached = "log quota reached", std::uint64_t used = 0)
      : bytes_(bytes), scope_(std::move(scope)), reached_(std::move(reached)), kept_(used) {}

  // The verdict on a line of `line_bytes` bytes (without its newline).
  Verdict Admit(std::uint64_t line_bytes);

  std::uint64_t dropped_lines() const { return dropped_lines_; }
  std::uint64_t dropped_bytes() const { return dropped_bytes_; }
  // After the first drop: "log quota reached (64 MiB of lines this attempt): later lines are
  // dropped and counted"; after later ones: "log quota reached: 1000 lines (98 KiB) dropped so far".
  std::string Note() const;
  // "log quota reached: 1234 lines (12.5 MiB) dropped".
  std::string SummaryLine() const;

 private:
  std::string Dropped(std::string_view suffix) const;

  std::uint64_t bytes_;
  std::string scope_, reached_;
  std::uint64_t kept_ = 0;
  std::uint64_t dropped_lines_ = 0, dropped_bytes_ = 0;
  std::uint64_t next_note_ = 1;  // the count of dropped lines that is due a note
};

}  // namespace dtrain::server
