// DaemonConfig: dtraind's configuration file (/etc/dtrain/dtraind.toml, see man/dtraind.8) as
// a plain struct, every key with its default filled in; the defaults themselves, with the paths
// resolved from the environment the daemon runs in; and the reverse, a DaemonConfig as TOML.
//
//   DaemonConfigLoad r = LoadDaemonConfig("/etc/dtrain/dtraind.toml");
//   if (!r.ok()) { for (const Diagnostic& d : r.diagnostics) std::cerr << FormatDiagnostic(d); }
//   std::cout << FormatDaemonConfig(*r.config);  // the resolved file: every key, with its value
//
// Checked like job files (config/job_file.h), every problem at once: syntax errors, unknown
// sections and keys (with a "did you mean"), wrong types, ranges, paths that are not absolute
// or too long for a socket address, malformed modes and listen, http or peer addresses, a listener on a
// non-loopback address or peers without a key_file, an http address off loopback without an
// http_token_file. A value's problem is
// at the value, an unknown key's at the key; a default from the environment that cannot be used
// (a socket path too long) is at its section's header, or line 0 when the section is absent.
// The file must exist: a daemon that runs without one uses DefaultDaemonConfig(), which
// ParseDaemonConfigText("", name) returns checked.
//
// Defaults of the paths, when the key is absent (an environment variable counts when it holds
// an absolute path; systemd's lists of several directories count by their first):
//   socket     $RUNTIME_DIRECTORY/dtraind.sock (systemd's RuntimeDirectory=), else
//              $XDG_RUNTIME_DIR/dtrain/dtraind.sock, else /tmp/dtrain-<uid>/dtraind.sock
//   state_dir  $STATE_DIRECTORY (systemd's StateDirectory=), else $XDG_STATE_HOME/dtrain, else
//              ~/.local/state/dtrain (~: $HOME, else the password database's home directory),
//              else /tmp/dtrain-<uid>/state
//
// No exception escapes the loaders (an allocation failure becomes a diagnostic).
// FormatDaemonConfig shares no state: safe for concurrent use. The others read the environment:
// safe for concurrent use with each other, not with a thread that changes the environment (setenv,
// putenv).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/job.h"

namespace dtrain::config {

// Ranges of the keys that dtraind's command line can override as well.
inline constexpr int kMaxJobsLimit = 1024;   // [daemon] max_jobs: [1, kMaxJobsLimit]
inline constexpr int kMaxCoresLimit = 8192;  // [daemon] cores: [0, kMaxCoresLimit]

// [daemon] max_log_line and log_quota: their defaults and ranges, in bytes.
inline constexpr std::uint64_t kDefaultMaxLogLine = 4096;
inline constexpr std::uint64_t kMinMaxLogLine = 256, kMaxMaxLogLine = std::uint64_t{1} << 20;
inline constexpr std::uint64_t kDefaultLogQuota = std::uint64_t{64} << 20;
inline constexpr std::uint64_t kMinLogQuota = std::uint64_t{1} << 20;
inline constexpr std::uint64_t kMaxLogQuota = std::uint64_t{64} << 30;
// [limits] log_quota_per_user: its default and largest value, in bytes (0: none).
inline constexpr std::uint64_t kDefaultUserLogQuota = std::uint64_t{4} << 30;
inline constexpr std::uint64_t kMaxUserLogQuota = std::uint64_t{64} << 40;

// The [daemon] log_level names, least severe first.
inline constexpr std::string_view kLogLevelChoices = "debug, info, warning, error";

// [limits]: how much of the host one user's jobs may hold, and what a job may ask for
// (man/dtraind.8, "Fair share and limits").
struct DaemonLimits {
  int jobs_per_user = 0;   // running jobs of one user at once; 0: only max_jobs bounds them
  int cores_per_user = 0;  // cores one user's running jobs hold at once; 0: only cores does
  int max_priority = 0;    // the highest priority an ordinary user may give a job
  std::vector<std::string> priority_users;  // names that may give up to kMaxPriority (root and
                                            // the daemon's own user always may)
  std::uint64_t default_memory_limit = 0;   // a job's memory_limit when it sets none; 0: none
  std::uint64_t max_memory_limit = 0;       // the most a job may set; 0: this host's memory
  std::uint64_t log_quota_per_user = kDefaultUserLogQuota;  // log bytes one user's jobs keep in
                                                            // the store, all jobs; 0: none

  bool operator==(const DaemonLimits&) const = default;
};

struct DaemonConfig {
  // [daemon]
  std::string socket;              // the Unix control socket: absolute, at most 107 bytes
  std::string state_dir;           // the store (state_dir/dtrain.db) and worker scratch: absolute
  unsigned socket_mode = 0660;     // the socket's permission bits, at most 0777
  int max_jobs = 2;                // jobs running at once
  int cores = 0;                   // cores the scheduler hands out; 0: all online cores
  std::string log_level = "info";  // one of kLogLevelChoices
  std::string http;                // "ADDR:PORT" of the web dashboard and /metrics; empty: off.
                                   // Off loopback only with http_token_file
  std::string http_token_file;     // a file holding the token HTTP clients must send
                                   // (Authorization: Bearer); absolute; empty: none
  std::uint64_t max_log_line = kDefaultMaxLogLine;  // a job's output line is cut after this
  std::uint64_t log_quota = kDefaultLogQuota;       // bytes of lines stored per job attempt
  // [workers]
  double grace_seconds = 10.0;  // SIGTERM to SIGKILL when a worker is cancelled or stopped
  int max_restarts = 3;         // for jobs whose [restart] max_restarts is not set (-1)
  // [cluster]
  std::string listen;              // "ADDR:PORT" of the TCP listener; empty: none. Without a
                                   // key_file only a loopback address is allowed
  std::vector<std::string> peers;  // "HOST:PORT" of the other daemons' listeners; needs key_file
  std::string key_file;            // the cluster's shared secret: absolute; empty: none
  std::string name;                // this node's name among its peers; empty: the host name
  std::string advertise;           // the IPv4 address or host name peers reach this host at;
                                   // empty: the listen address, or when that is a wildcard the
                                   // address of the route to the first peer, else 127.0.0.1
  bool allow_root = false;         // TCP clients may act as uid 0, and peers may have workers
                                   // of uid 0 started here
  // [limits]
  DaemonLimits limits;

  std::string source_path;  // the file read, as given; empty for DefaultDaemonConfig()

  bool operator==(const DaemonConfig&) const = default;
};

struct DaemonConfigLoad {
  std::optional<DaemonConfig> config;   // set exactly when diagnostics is empty
  std::vector<Diagnostic> diagnostics;  // by line, then column

  bool ok() const { return config.has_value(); }
};

// Reads the file at `path` (kept as source_path and diagnostic file name); it must exist.
DaemonConfigLoad LoadDaemonConfig(const std::string& path);

// The same for text already in memory, named `display_path` in diagnostics and source_path.
DaemonConfigLoad ParseDaemonConfigText(std::string_view text, const std::string& display_path);

// Every key at its default, the paths resolved from the environment (see above); unchecked.
DaemonConfig DefaultDaemonConfig();

// Whether a listen address ("ADDR:PORT", already checked) is on loopback: 127.0.0.0/8, [::1] or
// localhost.
bool IsLoopbackListen(std::string_view listen);

// The configuration as TOML with every key present. Parsing it again (with source_path as the
// display path) yields an equal DaemonConfig.
std::string FormatDaemonConfig(const DaemonConfig& config);

}  // namespace dtrain::config
