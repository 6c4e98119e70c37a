// What the daemon shows of sweeps, read from the store: the SWEEP object and the sweep_status
// reply of control_protocol.md ("Sweeps"). The control socket's sweep requests
// (sweep_requests.cc) and the dashboard's sweep page (dashboard_views.h) both build them here.
//
//   auto generated = co_await sweeps.Trials(record);             // on the io_context's thread
//   Result<nlohmann::json> reply =
//       SweepStatusJson(store, record, generated.ok() ? ... : nullptr, &sweeps.standing_cache());
//
// SweepStatusJson reads the store (it blocks on SQLite): call it off an event loop.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "config/sweep_file.h"
#include "core/status.h"
#include "daemon/store/store.h"

namespace dtrain::server {

class TrialStandingCache;

nlohmann::json SweepJson(const store::SweepRecord& sweep);

// {"sweep": SWEEP, "trials": [TRIAL...] (every trial, by index), "best": BEST or null}; an ASHA
// sweep's SWEEP has "asha": {"min_steps", "max_steps", "reduction_factor", "rungs"}.
// `generated`: the sweep's trials as its file draws them (SweepDriver::Trials), or null when it
// no longer loads (the trials' values then come from their rows alone). `cache`: the daemon's
// (SweepDriver::standing_cache), or null (ReadStandings).
Result<nlohmann::json> SweepStatusJson(store::Store& store, const store::SweepRecord& sweep,
                                       const config::SweepLoadResult* generated,
                                       TrialStandingCache* cache);

}  // namespace dtrain::server
