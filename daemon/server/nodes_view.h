// The NODE objects of control_protocol.md: this daemon first ("self": true), then each of its
// configured peers as its membership last saw them. What `dtrain nodes` and the dashboard's
// nodes page show.
//
//   nlohmann::json nodes = NodesJson("node1", "10.0.0.1:7070", jobs, &membership);
//
// Reads the job manager: call it on the daemon's I/O thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "daemon/server/job_manager.h"
#include "daemon/server/membership.h"

namespace dtrain::server {

// `membership` null: no peers.
nlohmann::json NodesJson(const std::string& node_name, const std::string& address,
                         const JobManager& jobs, const Membership* membership);

}  // namespace dtrain::server
