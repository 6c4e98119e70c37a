#include "daemon/runner/straggler.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>

#include "core/data/random.h"

namespace dtrain::runner {
namespace {

constexpr std::uint64_t kStepStream = 0x5354524147474C45ULL;  // the steps' hash, its own stream

}  // namespace

std::optional<StraggleSettings> ParseStraggle(std::string_view text) {
  std::istringstream fields{std::string(text)};
  StraggleSettings s;
  std::string rest;
  if (!(fields >> s.rank >> s.percent >> s.factor) || (fields >> rest) || s.rank < 0 ||
      s.percent < 0 || s.percent > 100 || !(s.factor >= 1.0)) {
    return std::nullopt;
  }
  return s;
}

bool StragglesAt(int percent, std::int64_t step) {
  return data::MixSeed(kStepStream, static_cast<std::uint64_t>(step)) % 100 <
         static_cast<std::uint64_t>(percent);
}

std::unique_ptr<Straggler> Straggler::FromEnvironment(int rank) {
  const char* text = std::getenv("DTRAIN_STRAGGLE");
  if (text == nullptr || *text == '\0') return nullptr;
  const std::optional<StraggleSettings> settings = ParseStraggle(text);
  if (!settings) {
    std::fprintf(stderr,
                 "DTRAIN_STRAGGLE: \"%s\" is not \"RANK PERCENT FACTOR\" (such as \"2 30 4\"); "
                 "no replica straggles\n",
                 text);
    return nullptr;
  }
  if (settings->rank != rank) return nullptr;
  return std::make_unique<Straggler>(*settings);
}

void Straggler::BeforeStep(std::int64_t step) {
  const Clock::time_point now = Clock::now();
  Clock::duration slept{};
  if (last_start_ && StragglesAt(settings_.percent, step)) {
    const auto sleep = std::chrono::duration_cast<Clock::duration>((now - *last_start_) *
                                                                   (settings_.factor - 1.0));
    std::this_thread::sleep_for(sleep);
    slept = Clock::now() - now;
  }
  last_start_ = now + slept;
}

}  // namespace dtrain::runner
