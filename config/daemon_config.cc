#include "config/daemon_config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/job_memory.h"
#include "config/toml_reader.h"
#include "config/toml_text.h"

namespace dtrain::config {
namespace {

using internal::Closed;
using internal::Describe;
using internal::Guarded;
using internal::ParseDocument;
using internal::ReadMemorySize;
using internal::ReadStrings;
using internal::ReadWholeFile;
using internal::RejectUnknown;
using internal::SectionTable;
using internal::Sink;
using internal::TableReader;

constexpr std::size_t kMaxSocketPath = sizeof(sockaddr_un{}.sun_path) - 1;  // 107: one NUL
constexpr unsigned kMaxSocketMode = 0777;  // permission bits only: no setuid, setgid, sticky
constexpr std::size_t kMaxHostName = 253;
constexpr std::size_t kMaxHostLabel = 63;

// ---------------------------------------------------------------------------------------------
// Defaults from the environment.

// $name when it holds an absolute path, else "". systemd's directory variables list several
// directories separated by ':' when the unit configures several; `first_of_list` takes the
// first of them.
std::string AbsoluteEnv(const char* name, bool first_of_list) {
  const char* value = std::getenv(name);
  if (value == nullptr || value[0] != '/') return "";
  std::string path(value);
  if (first_of_list) path.resize(std::min(path.size(), path.find(':')));
  return path;
}

// $HOME, else the home directory of the user in the password database, else "".
std::string HomeDirectory() {
  if (std::string home = AbsoluteEnv("HOME", false); !home.empty()) return home;
  const long suggested = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(suggested > 0 ? static_cast<std::size_t>(suggested) : 16384);
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(::getuid(), &entry, buffer.data(), buffer.size(), &found) != 0 ||
      found == nullptr || found->pw_dir == nullptr || found->pw_dir[0] != '/') {
    return "";
  }
  return found->pw_dir;
}

// The fallback directory of the user when no other location is known: /tmp/dtrain-<uid>.
std::string UserTempDirectory() { return "/tmp/dtrain-" + std::to_string(::getuid()); }

std::string DefaultSocket() {
  if (std::string runtime = AbsoluteEnv("RUNTIME_DIRECTORY", true); !runtime.empty()) {
    return runtime + "/dtraind.sock";
  }
  if (std::string xdg = AbsoluteEnv("XDG_RUNTIME_DIR", false); !xdg.empty()) {
    return xdg + "/dtrain/dtraind.sock";
  }
  return UserTempDirectory() + "/dtraind.sock";
}

std::string DefaultStateDir() {
  if (std::string state = AbsoluteEnv("STATE_DIRECTORY", true); !state.empty()) return state;
  if (std::string xdg = AbsoluteEnv("XDG_STATE_HOME", false); !xdg.empty()) {
    return xdg + "/dtrain";
  }
  if (std::string home = HomeDirectory(); !home.empty()) return home + "/.local/state/dtrain";
  return UserTempDirectory() + "/state";
}

// ---------------------------------------------------------------------------------------------
// Checks of string values: each returns "" when the value is usable, else what is wrong.

std::string AbsolutePathProblem(const std::string& path) {
  if (path.find('\0') != std::string::npos) return "must not contain a NUL character";
  if (path.empty() || path[0] != '/') return "must be an absolute path, got " + TomlString(path);
  return "";
}

std::string SocketPathProblem(const std::string& path) {
  if (std::string problem = AbsolutePathProblem(path); !problem.empty()) return problem;
  if (path.back() == '/') {
    return "must name the socket file, not a directory, got " + TomlString(path);
  }
  if (path.size() > kMaxSocketPath) {
    return "must be at most " + std::to_string(kMaxSocketPath) +
           " bytes long (what a Unix socket address holds), got " + std::to_string(path.size()) +
           " bytes";
  }
  return "";
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) { return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// A DNS host name (RFC 1123): dot-separated labels of letters, digits and inner hyphens.
bool IsHostName(std::string_view name) {
  if (name.empty() || name.size() > kMaxHostName) return false;
  while (true) {
    const std::size_t dot = name.find('.');
    const std::string_view label = name.substr(0, dot);
    if (label.empty() || label.size() > kMaxHostLabel || label.front() == '-' ||
        label.back() == '-' ||
        !std::all_of(label.begin(), label.end(), [](char c) { return IsAlnum(c) || c == '-'; })) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    name.remove_prefix(dot + 1);
  }
}

bool IsAddress(int family, const std::string& text) {
  unsigned char address[sizeof(in6_addr)];
  return ::inet_pton(family, text.c_str(), address) == 1;
}

std::string ListenProblem(const std::string& listen) {
  if (listen.empty()) return "";
  const std::string given = ", got " + TomlString(listen);
  const std::size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return "must be \"ADDR:PORT\" (such as \"0.0.0.0:7070\" or \"[::1]:7070\"), or \"\" for no "
           "TCP listener" +
           given;
  }
  const std::string host = listen.substr(0, colon);
  const std::string port = listen.substr(colon + 1);
  const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) {
    if (!IsAddress(AF_INET6, host.substr(1, host.size() - 2))) {
      return "must have an IPv6 address inside the brackets" + given;
    }
  } else if (host.find(':') != std::string::npos) {
    return "must have an IPv6 address in brackets, as in \"[::1]:7070\"" + given;
  } else if (!host.empty() && host.find_first_not_of("0123456789.") == std::string::npos) {
    if (!IsAddress(AF_INET, host)) return "must have a valid IPv4 address" + given;
  } else if (!IsHostName(host)) {
    return "must have an IPv4 address, an IPv6 address in brackets or a host name before the "
           "port" +
           given;
  }
  const bool digits =
      !port.empty() && port.size() <= 5 && std::all_of(port.begin(), port.end(), IsDigit);
  const long number = digits ? std::strtol(port.c_str(), nullptr, 10) : 0;
  if (number < 1 || number > 65535) return "must end in a port in [1, 65535]" + given;
  return "";
}

// A peer daemon's address: like a listen address, but never empty.
std::string PeerProblem(const std::string& peer) {
  if (peer.empty()) return "must be \"HOST:PORT\" (such as \"10.0.0.2:7070\"), got \"\"";
  return ListenProblem(peer);
}

// [cluster] advertise: an IPv4 address or a host name (the data plane is IPv4), never the
// wildcard; or nothing.
std::string AdvertiseProblem(const std::string& host) {
  if (host.empty()) return "";
  const std::string given = ", got " + TomlString(host);
  if (host.find_first_not_of("0123456789.") != std::string::npos) {
    return IsHostName(host) ? "" : "must be an IPv4 address or a host name, without a port" + given;
  }
  if (!IsAddress(AF_INET, host)) return "must be a valid IPv4 address" + given;
  if (host == "0.0.0.0") return "must be an address peers can reach, not 0.0.0.0" + given;
  return "";
}

// 1 to 4 octal digits meaning at most 0777 ("0660", "640"), or nothing.
std::optional<unsigned> ParseMode(std::string_view text) {
  if (text.empty() || text.size() > 4) return std::nullopt;
  unsigned mode = 0;
  for (const char c : text) {
    if (c < '0' || c > '7') return std::nullopt;
    mode = mode * 8 + static_cast<unsigned>(c - '0');
  }
  if (mode > kMaxSocketMode) return std::nullopt;
  return mode;
}

std::string ModeText(unsigned mode) {
  char text[16];
  std::snprintf(text, sizeof(text), "%04o", mode);
  return text;
}

// ---------------------------------------------------------------------------------------------
// Sections.

// Reads the string `key`, stored when `problem` finds nothing wrong with it.
void ReadChecked(TableReader& r, std::string_view key, std::string (*problem)(const std::string&),
                 std::string* out) {
  std::string text;
  const toml::node* node = r.String(key, &text);
  if (node == nullptr) return;
  if (std::string why = problem(text); !why.empty()) {
    r.Report(*node, key, std::move(why));
  } else {
    *out = std::move(text);
  }
}

void ReadSocketMode(TableReader& r, unsigned* mode) {
  const toml::node* node = r.Find("socket_mode");
  if (node == nullptr) return;
  const std::optional<unsigned> value =
      node->is_string() ? ParseMode(node->as_string()->get()) : std::nullopt;
  if (value) {
    *mode = *value;
  } else {
    r.Report(*node, "socket_mode",
             "must be an octal string of permission bits from \"0000\" to \"0777\", such as "
             "\"0660\", got " +
                 Describe(*node));
  }
}

void ReadDaemon(TableReader& r, DaemonConfig* c) {
  ReadChecked(r, "socket", SocketPathProblem, &c->socket);
  ReadChecked(r, "state_dir", AbsolutePathProblem, &c->state_dir);
  ReadSocketMode(r, &c->socket_mode);
  r.Int("max_jobs", 1, kMaxJobsLimit, &c->max_jobs);
  r.Int("cores", 0, kMaxCoresLimit, &c->cores);
  r.OneOf("log_level", kLogLevelChoices, &c->log_level);
  const toml::node* http = r.String("http", &c->http);
  if (http != nullptr) {
    if (std::string why = ListenProblem(c->http); !why.empty()) {
      r.Report(*http, "http", std::move(why));
      c->http.clear();
    }
  }
  ReadChecked(r, "http_token_file", AbsolutePathProblem, &c->http_token_file);
  r.Size("max_log_line", kMinMaxLogLine, kMaxMaxLogLine, &c->max_log_line);
  r.Size("log_quota", kMinLogQuota, kMaxLogQuota, &c->log_quota);
  if (http != nullptr && !c->http.empty() && !IsLoopbackListen(c->http) &&
      c->http_token_file.empty() && !r.Failed("http_token_file")) {
    r.Report(*http, "http",
             "is not a loopback address, and no http_token_file is set: a dashboard other hosts "
             "can reach needs a token its clients send (Authorization: Bearer TOKEN), got " +
                 TomlString(c->http));
  }
  if (!r.Present("socket")) {
    if (std::string why = SocketPathProblem(c->socket); !why.empty()) {
      r.Missing("socket", "is not set, and its default from the environment, " +
                              TomlString(c->socket) + ", cannot be used: " + why);
    }
  }
}

std::string UserNameProblem(const std::string& name) {
  const bool plain = !name.empty() && name.size() <= 256 &&
                     std::all_of(name.begin(), name.end(), [](char ch) {
                       return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' ||
                              ch == '-' || ch == '.' || ch == '$';
                     });
  return plain ? "" : "must be a user name (letters, digits, '_', '-', '.'), got " + TomlString(name);
}

void ReadLimits(TableReader& r, DaemonLimits* l) {
  r.Int("jobs_per_user", 0, kMaxJobsLimit, &l->jobs_per_user);
  r.Int("cores_per_user", 0, kMaxCoresLimit, &l->cores_per_user);
  r.Int("max_priority", kMinPriority, kMaxPriority, &l->max_priority);
  ReadStrings(r, "priority_users", "user", "user name", UserNameProblem, &l->priority_users);
  const toml::node* fallback = ReadMemorySize(r, "default_memory_limit", &l->default_memory_limit);
  ReadMemorySize(r, "max_memory_limit", &l->max_memory_limit);
  r.Size("log_quota_per_user", 0, kMaxUserLogQuota, &l->log_quota_per_user);
  if (fallback != nullptr && l->max_memory_limit > 0 &&
      l->default_memory_limit > l->max_memory_limit) {
    r.Report(*fallback, "default_memory_limit",
             "is " + FormatBytes(l->default_memory_limit) + ", more than max_memory_limit (" +
                 FormatBytes(l->max_memory_limit) + ")");
  }
}

void ReadCluster(TableReader& r, DaemonConfig* c) {
  const toml::node* listen = r.String("listen", &c->listen);
  if (listen != nullptr) {
    if (std::string why = ListenProblem(c->listen); !why.empty()) {
      r.Report(*listen, "listen", std::move(why));
      c->listen.clear();
    }
  }
  ReadStrings(r, "peers", "peer", "\"HOST:PORT\"", PeerProblem, &c->peers);
  ReadChecked(r, "key_file", AbsolutePathProblem, &c->key_file);
  const toml::node* name = r.String("name", &c->name);
  if (name != nullptr && !c->name.empty() && !IsHostName(c->name)) {
    r.Report(
        *name, "name",
        "must be letters, digits, hyphens and dots, like a host name, got " + TomlString(c->name));
  }
  ReadChecked(r, "advertise", AdvertiseProblem, &c->advertise);
  r.Bool("allow_root", &c->allow_root);
  if (!c->key_file.empty() || r.Failed("key_file")) return;
  if (listen != nullptr && !c->listen.empty() && !IsLoopbackListen(c->listen)) {
    r.Report(*listen, "listen",
             "is not a loopback address, and no key_file is set: a daemon without the cluster's "
             "key listens only on 127.0.0.1, [::1] or localhost, got " +
                 TomlString(c->listen));
  }
  if (const toml::node* peers = r.Find("peers"); peers != nullptr && !c->peers.empty()) {
    r.Report(*peers, "peers", "need key_file: peer daemons authenticate with the cluster's key");
  }
}

DaemonConfig ReadDaemonConfig(const toml::table& root, const std::string& display_path,
                              Sink& sink) {
  DaemonConfig c = DefaultDaemonConfig();
  c.source_path = display_path;
  TableReader top(&root, "", sink);
  TableReader daemon(SectionTable(top, "daemon"), "daemon", sink);
  TableReader workers(SectionTable(top, "workers"), "workers", sink);
  TableReader cluster(SectionTable(top, "cluster"), "cluster", sink);
  TableReader limits(SectionTable(top, "limits"), "limits", sink);

  ReadDaemon(daemon, &c);
  workers.Number("grace_seconds", Closed(0.1, 600), &c.grace_seconds);
  workers.Int("max_restarts", 0, kMaxRestartsLimit, &c.max_restarts);
  ReadCluster(cluster, &c);
  ReadLimits(limits, &c.limits);

  const TableReader* const readers[] = {&top, &daemon, &workers, &cluster, &limits};
  RejectUnknown(readers, sink);
  return c;
}

DaemonConfigLoad Parse(std::string_view text, const std::string& display_path) {
  Sink sink(display_path);
  const std::optional<toml::table> root = ParseDocument(text, display_path, sink);
  if (!root) return {std::nullopt, std::move(sink).Take()};
  DaemonConfig config = ReadDaemonConfig(*root, display_path, sink);
  if (sink.size() > 0) return {std::nullopt, std::move(sink).Take()};
  return {std::move(config), {}};
}

}  // namespace

DaemonConfig DefaultDaemonConfig() {
  DaemonConfig c;
  c.socket = DefaultSocket();
  c.state_dir = DefaultStateDir();
  return c;
}

DaemonConfigLoad ParseDaemonConfigText(std::string_view text, const std::string& display_path) {
  return Guarded<DaemonConfigLoad>(display_path, [&] { return Parse(text, display_path); });
}

DaemonConfigLoad LoadDaemonConfig(const std::string& path) {
  return Guarded<DaemonConfigLoad>(path, [&]() -> DaemonConfigLoad {
    std::string text, problem;
    if (!ReadWholeFile(path, "the daemon configuration file", &text, &problem)) {
      return {std::nullopt, {Diagnostic{path, 0, 0, "", problem}}};
    }
    return Parse(text, path);
  });
}

bool IsLoopbackListen(std::string_view listen) {
  const std::string_view host = listen.substr(0, listen.rfind(':'));
  return host == "localhost" || host == "[::1]" ||
         (host.starts_with("127.") && IsAddress(AF_INET, std::string(host)));
}

std::string FormatDaemonConfig(const DaemonConfig& c) {
  TomlWriter w;
  w.Comment("dtraind configuration resolved from " +
            (c.source_path.empty() ? std::string("the defaults") : TomlString(c.source_path)) +
            ": every key, with its value.");
  w.Section("daemon");
  w.String("socket", c.socket);
  w.String("state_dir", c.state_dir);
  w.String("socket_mode", ModeText(c.socket_mode));
  w.Int("max_jobs", c.max_jobs);
  w.Int("cores", c.cores);
  w.String("log_level", c.log_level);
  w.String("http", c.http);
  w.Path("http_token_file", c.http_token_file);
  w.Int("max_log_line", static_cast<std::int64_t>(c.max_log_line));
  w.Int("log_quota", static_cast<std::int64_t>(c.log_quota));
  w.Section("workers");
  w.Double("grace_seconds", c.grace_seconds);
  w.Int("max_restarts", c.max_restarts);
  w.Section("cluster");
  w.String("listen", c.listen);
  w.StringArray("peers", c.peers);
  w.Path("key_file", c.key_file);
  w.String("name", c.name);
  w.String("advertise", c.advertise);
  w.Bool("allow_root", c.allow_root);
  w.Section("limits");
  w.Int("jobs_per_user", c.limits.jobs_per_user);
  w.Int("cores_per_user", c.limits.cores_per_user);
  w.Int("max_priority", c.limits.max_priority);
  w.StringArray("priority_users", c.limits.priority_users);
  w.Unsigned("default_memory_limit", c.limits.default_memory_limit);
  w.Unsigned("max_memory_limit", c.limits.max_memory_limit);
  w.Unsigned("log_quota_per_user", c.limits.log_quota_per_user);
  return std::move(w).Take();
}

}  // namespace dtrain::config
