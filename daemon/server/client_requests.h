// A client's request through the checks its row of the request table asks for (request_table.h),
// in the protocol's order: a caller without the cluster key may only query; an unknown type, or
// a missing "id", is bad_request; a request that acts for a user needs one (control_caller.h);
// an owner-only one needs the job's owner or root. Then its handler (request_handlers.h) answers.
//
//   if (!co_await ServeClientRequest(ctx, socket, request, FindRequest(type), caller)) close;
//
// Run on the daemon's I/O thread.
#pragma once

#include <asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include "daemon/server/control_caller.h"
#include "daemon/server/control_context.h"
#include "daemon/server/request_table.h"

namespace dtrain::server {

// `row`: the request's type, a client's (null: a type unknown to this caller). False when the
// connection should close.
asio::awaitable<bool> ServeClientRequest(ControlContext& ctx, Socket& socket,
                                         const nlohmann::json& request, const RequestRow* row,
                                         const Caller& caller);

}  // namespace dtrain::server
