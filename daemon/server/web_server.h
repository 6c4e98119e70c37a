// WebServer: dtraind's HTTP listener ([daemon] http, off unless set): the dashboard (its pages,
// web_assets.h, and their event stream, dashboard_stream.h) and Prometheus's /metrics
// (prometheus_text.h). It runs on the daemon's own io_context, so it reads
// the job manager's live state without locks; store reads go to the blocking pool. Asio code of
// our own rather than an HTTP library: it serves a few GET paths, no request bodies, one request
// per connection (http_message.h), and a library would bring threads of its own.
//
//   WebServer web(io, pool, store, jobs, {.address = "127.0.0.1:8470", .token = &key, ...});
//   Status s = web.Listen();   // bound: the daemon may say it is ready
//   web.Start();               // accepts until Close()
//
// With a token (from [daemon] http_token_file), every request must carry `Authorization: Bearer
// TOKEN` or the cookie that opening /?token=TOKEN in a browser sets (HttpOnly, SameSite=Strict),
// checked in constant time; others get 401. Without a token (a loopback listener), a request
// whose Host names another host than localhost, 127.0.0.1, [::1] or the listen address's is
// answered 421: a page of another site that a DNS name re-pointed at loopback reads nothing;
// and it serves only the users who may open the control socket (socket_access.h), the local uid
// of the connection told by the kernel (local_peer.h): others get 403.
// Connections are capped in all and per client (listener_caps.h: a local uid over loopback, else
// an address), and so are event streams; a connection over its cap is closed at once, a stream
// over its cap answered 503. A request whose head is not complete within
// kRequestTimeout, or is larger than kMaxRequestHead, is answered 400 or 431 and closed. Methods
// other than GET and HEAD get 405; unknown paths 404. One thread at a time (the io_context's).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/net/auth.h"
#include "core/status.h"
#include "daemon/server/job_manager.h"
#include "daemon/server/listener_caps.h"
#include "daemon/server/membership.h"
#include "daemon/server/sweep_driver.h"
#include "daemon/store/store.h"

namespace dtrain::server {

struct WebOptions {
  std::string address;                     // "ADDR:PORT"
  const net::ClusterKey* token = nullptr;  // when set, requests must bear it
  std::string store_path;                  // the store's file, for its size
  std::string version;
  int peers = 0;                           // configured peer daemons
  const Membership* membership = nullptr;  // their state; null: none
  std::string node_name;                   // for the dashboard's nodes page
  std::string listen;                      // [cluster] listen, likewise
  std::string socket_path;                 // the control socket, whose users alone may read a
                                           // dashboard without a token
  SweepDriver* sweeps = nullptr;           // the daemon's sweeps, for the sweep pages
  ConnectionCaps connections = kDefaultListenerCaps.http;
  ConnectionCaps streams = kDefaultListenerCaps.streams;
};

class WebServer {
 public:
  static constexpr std::chrono::seconds kRequestTimeout{10};

  WebServer(asio::io_context& io, asio::thread_pool& pool, store::Store& store, JobManager& jobs,
            WebOptions options);
  ~WebServer();
  WebServer(const WebServer&) = delete;
  WebServer& operator=(const WebServer&) = delete;

  Status Listen();
  // After Listen: where a browser finds the dashboard, "http://ADDR:PORT/" with the bound port.
  std::string Url() const;
  void Start();
  void Close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtrain::server
