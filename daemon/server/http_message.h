// HTTP/1.1 as dtraind's web listener ([daemon] http) speaks it: a request's head parsed, a
// response written whole. The listener serves GET and HEAD only, reads no request bodies and
// answers one request per connection (Connection: close), so this is all of the protocol it needs.
//
//   std::optional<HttpRequest> r = ParseRequestHead("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
//   std::string bytes = FormatResponse({.status = 200, .body = "ok\n"}, /*head_only=*/false);
//
// Pure functions: safe for concurrent use.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dtrain::server {

// The most bytes a request's head (request line and headers) may take.
inline constexpr std::size_t kMaxRequestHead = 8192;

struct HttpRequest {
  std::string method;  // as sent, e.g. "GET"
  std::string path;    // the target before any '?', e.g. "/metrics"
  std::string query;   // after the '?', without it; empty when none
  std::vector<std::pair<std::string, std::string>> headers;  // names in lower case, values trimmed

  // The first header of that (lower-case) name.
  std::optional<std::string> Header(std::string_view name) const;
};

// The head up to and including its blank line; nullopt when it is not an HTTP/1.0 or 1.1
// request line followed by well-formed header lines, or the target is not an absolute path.
std::optional<HttpRequest> ParseRequestHead(std::string_view head);

// The value of `key` in a query string ("job=7&x=1"), as sent (no percent-decoding: the
// listener's keys take digits, state names and hex tokens); nullopt when absent.
std::optional<std::string> QueryValue(std::string_view query, std::string_view key);
// The value of cookie `name` in a Cookie header ("a=1; dtrain_token=ab"); nullopt when absent.
std::optional<std::string> CookieValue(std::string_view header, std::string_view name);

// The host a Host header's value names, in lower case and without its port:
// "LocalHost:8470" -> "localhost", "[::1]:8470" -> "[::1]", "127.0.0.1" -> "127.0.0.1".
std::string HostName(std::string_view host_header);

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra, e.g. WWW-Authenticate
};

// Status line, headers (Content-Type, Content-Length, Connection: close, Cache-Control: no-store,
// X-Content-Type-Options: nosniff, then the extra ones) and, unless head_only, the body.
std::string FormatResponse(const HttpResponse& response, bool head_only);

}  // namespace dtrain::server
