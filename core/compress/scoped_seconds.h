// ScopedSeconds: adds the seconds of its scope to a total — how a compressor counts the time it
// spends encoding and decoding, apart from the exchange between (CompressionStats::seconds).
//
//   { ScopedSeconds timer(stats.seconds); Encode(...); }
#pragma once

#include <chrono>

namespace dtrain::compress {

class ScopedSeconds {
 public:
  explicit ScopedSeconds(double& total) : total_(total) {}
  ScopedSeconds(const ScopedSeconds&) = delete;
  ScopedSeconds& operator=(const ScopedSeconds&) = delete;
  ~ScopedSeconds() {
    total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  double& total_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace dtrain::compress
