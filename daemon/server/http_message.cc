#include "daemon/server/http_message.h"

#include <algorithm>
#include <cctype>

namespace dtrain::server {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool IsToken(std::string_view s) {
  static constexpr std::string_view kSeparators = "()<>@,;:\\\"/[]?={} \t";
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return c > 32 && c < 127 && kSeparators.find(c) == std::string_view::npos;
  });
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 303: return "See Other";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 421: return "Misdirected Request";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

}  // namespace

std::optional<std::string> HttpRequest::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return std::nullopt;
}

std::optional<HttpRequest> ParseRequestHead(std::string_view head) {
  if (!head.ends_with("\r\n\r\n")) return std::nullopt;
  head.remove_suffix(2);  // each line, the last included, now ends in "\r\n"
  const std::size_t line_end = head.find("\r\n");
  const std::string_view line = head.substr(0, line_end);
  const std::size_t first = line.find(' ');
  const std::size_t last = line.rfind(' ');
  if (first == std::string_view::npos || first == last) return std::nullopt;
  HttpRequest r;
  r.method = std::string(line.substr(0, first));
  const std::string_view target = line.substr(first + 1, last - first - 1);
  const std::string_view version = line.substr(last + 1);
  if (!IsToken(r.method) || (version != "HTTP/1.1" && version != "HTTP/1.0")) return std::nullopt;
  if (target.empty() || target.front() != '/' ||
      std::any_of(target.begin(), target.end(), [](char c) { return c <= 32 || c == 127; })) {
    return std::nullopt;
  }
  const std::size_t question = target.find('?');
  r.path = std::string(target.substr(0, question));
  if (question != std::string_view::npos) r.query = std::string(target.substr(question + 1));

  std::string_view rest = head.substr(line_end + 2);
  while (!rest.empty()) {
    const std::size_t end = rest.find("\r\n");
    const std::string_view header = rest.substr(0, end);
    rest.remove_prefix(end + 2);
    const std::size_t colon = header.find(':');
    if (colon == std::string_view::npos || !IsToken(header.substr(0, colon))) return std::nullopt;
    const std::string_view value = Trim(header.substr(colon + 1));
    if (std::any_of(value.begin(), value.end(),
                    [](char c) { return (c < 32 && c != '\t') || c == 127; })) {
      return std::nullopt;
    }
    r.headers.emplace_back(Lower(header.substr(0, colon)), std::string(value));
  }
  return r;
}

namespace {

// The value after `key=` in a list of key=value pairs separated by `separator`.
std::optional<std::string> PairValue(std::string_view list, char separator, std::string_view key) {
  while (!list.empty()) {
    const std::size_t end = list.find(separator);
    const std::string_view pair = Trim(list.substr(0, end));
    const std::size_t equals = pair.find('=');
    if (equals != std::string_view::npos && pair.substr(0, equals) == key) {
      return std::string(pair.substr(equals + 1));
    }
    if (end == std::string_view::npos) break;
    list.remove_prefix(end + 1);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> QueryValue(std::string_view query, std::string_view key) {
  return PairValue(query, '&', key);
}

std::optional<std::string> CookieValue(std::string_view header, std::string_view name) {
  return PairValue(header, ';', name);
}

std::string HostName(std::string_view host_header) {
  const std::size_t end = host_header.starts_with('[') ? host_header.find(']') + 1
                                                       : host_header.rfind(':');
  return Lower(host_header.substr(0, end));
}

std::string FormatResponse(const HttpResponse& response, bool head_only) {
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " +
                    Reason(response.status) + "\r\n";
  out += "Content-Type: " + response.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  out += "Connection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n";
  for (const auto& [name, value] : response.headers) out += name + ": " + value + "\r\n";
  out += "\r\n";
  if (!head_only) out += response.body;
  return out;
}

}  // namespace dtrain::server
