// Fuzz target: the head of an HTTP request as dtraind's web listener parses it
// (daemon/server/http_message.h), fed what a client may send before the blank line. Each input
// goes through ParseRequestHead and, when it parses, through the header lookups the listener
// does and the response it would write. Invariants: no crash, no leak, no exception; a parsed
// request has a path starting with '/' and no control character in it, header names in lower
// case.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/server/http_message.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dtrain::server;
  const std::string_view head(reinterpret_cast<const char*>(data), size);
  const std::optional<HttpRequest> request = ParseRequestHead(head);
  if (!request) return 0;
  if (request->path.empty() || request->path.front() != '/') __builtin_trap();
  for (const char c : request->path) {
    if (static_cast<unsigned char>(c) <= 32 || c == 127) __builtin_trap();
  }
  for (const auto& [name, value] : request->headers) {
    for (const char c : name) {
      if (std::isupper(static_cast<unsigned char>(c))) __builtin_trap();
    }
  }
  (void)request->Header("authorization");
  HttpResponse response;
  response.body = request->path + "?" + request->query;
  const std::string bytes = FormatResponse(response, request->method == "HEAD");
  if (bytes.find("\r\n\r\n") == std::string::npos) __builtin_trap();
  return 0;
}
