#include "config/daemon_config.h"

#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"
#include "config/diagnostic_checks.h"

namespace dtrain::config {
namespace daemon_config_test {

using testing::CheckDiagnostics;
using testing::Single;
using testing::ReadFile;
using testing::TestData;

std::string DaemonPath(std::string_view name) { return (TestData() / "daemon" / name).string(); }

// Sets or unsets environment variables for one test and restores every one on destruction.
class ScopedEnv {
 public:
  ScopedEnv() = default;
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        ::unsetenv(it->first.c_str());
      }
    }
  }

  // `value` nullopt: unset.
  void Set(const std::string& name, std::optional<std::string> value) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old != nullptr ? std::optional<std::string>(old) : std::nullopt);
    if (value) {
      ::setenv(name.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// An environment with none of the variables the defaults come from, then `set` on top.
void Environment(ScopedEnv& env, const std::vector<std::pair<std::string, std::string>>& set) {
  for (const char* name :
       {"RUNTIME_DIRECTORY", "STATE_DIRECTORY", "XDG_RUNTIME_DIR", "XDG_STATE_HOME", "HOME"}) {
    env.Set(name, std::nullopt);
  }
  for (const auto& [name, value] : set) env.Set(name, value);
}

std::string UserTemp() { return "/tmp/dtrain-" + std::to_string(::getuid()); }

DaemonConfig MustParse(std::string_view text, const std::string& display = "dtraind.toml") {
  const DaemonConfigLoad r = ParseDaemonConfigText(text, display);
  for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(r.ok());
  BOOST_REQUIRE(r.diagnostics.empty());
  return *r.config;
}

BOOST_AUTO_TEST_SUITE(daemon_config)

BOOST_AUTO_TEST_CASE(the_packaged_configuration_is_valid_and_changes_no_default) {
  // packaging/dtraind.toml, installed as /etc/dtrain/dtraind.toml: every key commented out as
  // "#key = value".
  const std::string path = (TestData().parent_path().parent_path() / "packaging" / "dtraind.toml").string();
  const DaemonConfigLoad loaded = LoadDaemonConfig(path);
  for (const Diagnostic& d : loaded.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(loaded.ok());
  DaemonConfig defaults = DefaultDaemonConfig();
  defaults.source_path = path;
  BOOST_TEST((*loaded.config == defaults));
  // Uncommented, its examples are valid settings too.
  std::string text = ReadFile(path);
  for (std::size_t at = 0; (at = text.find("\n#", at)) != std::string::npos; ++at) {
    if (text[at + 2] != ' ') text.erase(at + 1, 1);
  }
  const DaemonConfigLoad uncommented = ParseDaemonConfigText(text, "uncommented.toml");
  for (const Diagnostic& d : uncommented.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_TEST(uncommented.ok());
}

BOOST_AUTO_TEST_CASE(defaults_under_systemd_come_from_its_directories) {
  ScopedEnv env;
  Environment(env, {{"RUNTIME_DIRECTORY", "/run/dtrain"},
                    {"STATE_DIRECTORY", "/var/lib/dtrain"},
                    {"XDG_RUNTIME_DIR", "/run/user/1000"},
                    {"XDG_STATE_HOME", "/users/u/.local/state"},
                    {"HOME", "/users/u"}});
  const DaemonConfig c = DefaultDaemonConfig();
  BOOST_TEST(c.socket == "/run/dtrain/dtraind.sock");
  BOOST_TEST(c.state_dir == "/var/lib/dtrain");
  BOOST_TEST(c.socket_mode == 0660u);
  BOOST_TEST(c.max_jobs == 2);
  BOOST_TEST(c.cores == 0);
  BOOST_TEST(c.log_level == "info");
  BOOST_TEST(c.max_log_line == 4096u);
  BOOST_TEST(c.log_quota == 64u << 20);
  BOOST_TEST(c.grace_seconds == 10.0);
  BOOST_TEST(c.max_restarts == 3);
  BOOST_TEST(c.listen.empty());
  BOOST_TEST(c.source_path.empty());
}

BOOST_AUTO_TEST_CASE(systemd_lists_of_directories_count_by_their_first) {
  ScopedEnv env;
  Environment(env, {{"RUNTIME_DIRECTORY", "/run/dtrain:/run/other"},
                    {"STATE_DIRECTORY", "/var/lib/dtrain:/var/lib/other"}});
  const DaemonConfig c = DefaultDaemonConfig();
  BOOST_TEST(c.socket == "/run/dtrain/dtraind.sock");
  BOOST_TEST(c.state_dir == "/var/lib/dtrain");
}

BOOST_AUTO_TEST_CASE(defaults_for_a_user_follow_xdg) {
  ScopedEnv env;
  Environment(env, {{"XDG_RUNTIME_DIR", "/run/user/1000"},
                    {"XDG_STATE_HOME", "/users/u/state"},
                    {"HOME", "/users/u"}});
  const DaemonConfig c = DefaultDaemonConfig();
  BOOST_TEST(c.socket == "/run/user/1000/dtrain/dtraind.sock");
  BOOST_TEST(c.state_dir == "/users/u/state/dtrain");
}

BOOST_AUTO_TEST_CASE(without_xdg_the_socket_is_in_tmp_and_the_state_in_home) {
  ScopedEnv env;
  // Relative or empty values do not count (the XDG base directory specification says so).
  Environment(env, {{"RUNTIME_DIRECTORY", ""},
                    {"XDG_RUNTIME_DIR", "relative/run"},
                    {"XDG_STATE_HOME", ""},
                    {"HOME", "/users/someone"}});
  const DaemonConfig c = DefaultDaemonConfig();
  BOOST_TEST(c.socket == UserTemp() + "/dtraind.sock");
  BOOST_TEST(c.state_dir == "/users/someone/.local/state/dtrain");
}

BOOST_AUTO_TEST_CASE(without_home_the_state_is_in_the_users_home_or_tmp) {
  ScopedEnv env;
  Environment(env, {});
  const std::string state = DefaultDaemonConfig().state_dir;
  BOOST_TEST_MESSAGE("state_dir: " << state);
  BOOST_TEST(state.front() == '/');
  BOOST_TEST((state.ends_with("/.local/state/dtrain") || state == UserTemp() + "/state"));
}

BOOST_AUTO_TEST_CASE(absent_keys_take_the_defaults_of_the_environment) {
  ScopedEnv env;
  Environment(env, {{"RUNTIME_DIRECTORY", "/run/dtrain"}, {"STATE_DIRECTORY", "/var/lib/dtrain"}});
  DaemonConfig expected = DefaultDaemonConfig();
  expected.source_path = "empty.toml";
  BOOST_TEST((MustParse("", "empty.toml") == expected));
  // A section present with a few keys leaves the others at their defaults.
  const DaemonConfig c = MustParse("[daemon]\nmax_jobs = 5\n[workers]\n");
  BOOST_TEST(c.max_jobs == 5);
  BOOST_TEST(c.socket == "/run/dtrain/dtraind.sock");
  BOOST_TEST(c.grace_seconds == 10.0);
}

BOOST_AUTO_TEST_CASE(full_file_maps_every_key) {
  const DaemonConfigLoad r = LoadDaemonConfig(DaemonPath("full.toml"));
  for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(r.ok());
  const DaemonConfig& c = *r.config;
  BOOST_TEST(c.socket == "/run/dtrain-test/control.sock");
  BOOST_TEST(c.state_dir == "/var/lib/dtrain-test");
  BOOST_TEST(c.socket_mode == 0600u);
  BOOST_TEST(c.max_jobs == 8);
  BOOST_TEST(c.cores == 16);
  BOOST_TEST(c.log_level == "debug");
  BOOST_TEST(c.max_log_line == 16384u);
  BOOST_TEST(c.log_quota == 1073741824u);
  BOOST_TEST(c.grace_seconds == 2.5);
  BOOST_TEST(c.max_restarts == 0);
  BOOST_TEST(c.listen == "[::1]:7070");
  BOOST_TEST((c.peers == std::vector<std::string>{"[::1]:7071", "node-2:7070"}));
  BOOST_TEST(c.key_file == "/etc/dtrain-test/cluster.key");
  BOOST_TEST(c.name == "node-1");
  BOOST_TEST(c.advertise == "node-1.lab");
  BOOST_TEST(c.limits.jobs_per_user == 3);
  BOOST_TEST(c.limits.cores_per_user == 12);
  BOOST_TEST(c.limits.max_priority == 10);
  BOOST_TEST((c.limits.priority_users == std::vector<std::string>{"alice", "bob.lab"}));
  BOOST_TEST(c.limits.default_memory_limit == std::uint64_t{2} << 30);
  BOOST_TEST(c.limits.max_memory_limit == std::uint64_t{8} << 30);
  BOOST_TEST(c.limits.log_quota_per_user == std::uint64_t{1} << 30);
  BOOST_TEST(c.source_path == DaemonPath("full.toml"));
}

BOOST_AUTO_TEST_CASE(every_error_of_a_file_is_reported_in_file_order) {
  const std::string f = DaemonPath("invalid/many-errors.toml");
  CheckDiagnostics(
      LoadDaemonConfig(f),
      {{f, 2, 1, "max_jobs", "unknown key; did you mean 'daemon.max_jobs'?"},
       {f, 5, 10, "daemon.socket", "must be an absolute path, got \"run/dtraind.sock\""},
       {f, 6, 13, "daemon.state_dir", "must be a string, got the integer 42"},
       {f, 7, 15, "daemon.socket_mode",
        "must be an octal string of permission bits from \"0000\" to \"0777\", such as "
        "\"0660\", got the string \"0668\""},
       {f, 8, 12, "daemon.max_jobs", "must be an integer in [1, 1024], got 0"},
       {f, 9, 9, "daemon.cores", "must be an integer in [0, 8192], got the string \"all\""},
       {f, 10, 13, "daemon.log_level",
        "must be one of: debug, info, warning, error; got \"warnig\" (did you mean \"warning\"?)"},
       {f, 11, 1, "daemon.sockets", "unknown key; did you mean 'socket'?"},
       {f, 14, 17, "workers.grace_seconds", "must be a finite number in [0.1, 600], got inf"},
       {f, 15, 16, "workers.max_restarts", "must be an integer in [0, 100], got 101"},
       {f, 18, 10, "cluster.listen", "must be \"ADDR:PORT\""},
       {f, 20, 2, "worker", "unknown section; did you mean 'workers'?"}});
}

BOOST_AUTO_TEST_CASE(syntax_error_is_one_diagnostic_where_toml_stopped) {
  const std::string f = DaemonPath("invalid/syntax-error.toml");
  const Diagnostic d = Single(LoadDaemonConfig(f));
  BOOST_TEST(d.file == f);
  BOOST_TEST(d.line == 3);
  BOOST_TEST(d.key.empty());
  BOOST_TEST(d.message.starts_with("TOML syntax error: "));
}

BOOST_AUTO_TEST_CASE(the_file_must_exist_and_be_a_file) {
  const std::string absent = DaemonPath("no-such.toml");
  const Diagnostic missing = Single(LoadDaemonConfig(absent));
  BOOST_TEST(missing.file == absent);
  BOOST_TEST(missing.line == 0);
  BOOST_TEST(missing.message ==
             "cannot read the daemon configuration file: No such file or directory");
  const dtrain::testing::TempDir dir;
  const Diagnostic directory = Single(LoadDaemonConfig(dir.path().string()));
  BOOST_TEST(directory.message == "cannot read the daemon configuration file: it is a directory, not a regular file");
}

BOOST_AUTO_TEST_CASE(other_values_out_of_range_or_of_the_wrong_type) {
  CheckDiagnostics(
      ParseDaemonConfigText("[daemon]\n"
                            "max_jobs = 2.0\n"
                            "cores = 8193\n"
                            "log_level = 3\n"
                            "state_dir = \"\"\n"
                            "[workers]\n"
                            "grace_seconds = 0.05\n"
                            "max_restarts = -1\n"
                            "[cluster]\n"
                            "listen = 7070\n",
                            "d.toml"),
      {{"d.toml", 2, 12, "daemon.max_jobs", "got the float 2"},
       {"d.toml", 3, 9, "daemon.cores", "must be an integer in [0, 8192], got 8193"},
       {"d.toml", 4, 13, "daemon.log_level", "got the integer 3"},
       {"d.toml", 5, 13, "daemon.state_dir", "must be an absolute path, got \"\""},
       {"d.toml", 7, 17, "workers.grace_seconds", "must be a number in [0.1, 600], got 0.05"},
       {"d.toml", 8, 16, "workers.max_restarts", "[0, 100], got -1"},
       {"d.toml", 10, 10, "cluster.listen", "must be a string, got the integer 7070"}});
  const DaemonConfig c = MustParse("[workers]\ngrace_seconds = 30\n");  // an integer is a number
  BOOST_TEST(c.grace_seconds == 30.0);
}

BOOST_AUTO_TEST_CASE(sections_must_be_tables_and_unknown_keys_list_the_allowed) {
  CheckDiagnostics(
      ParseDaemonConfigText("daemon = 5\n"
                            "[cluster]\n"
                            "colour = \"blue\"\n"
                            "[extra]\n",
                            "d.toml"),
      {{"d.toml", 1, 10, "daemon", "must be a table ([daemon]), got the integer 5"},
       {"d.toml", 3, 1, "cluster.colour",
        "unknown key; allowed: listen, peers, key_file, name, advertise, allow_root"},
       {"d.toml", 4, 2, "extra", "unknown section; allowed: daemon, workers, cluster"}});
}

BOOST_AUTO_TEST_CASE(socket_paths_must_fit_a_socket_address) {
  const std::string longest = "/" + std::string(106, 's');  // 107 bytes: the limit
  BOOST_TEST(MustParse("[daemon]\nsocket = \"" + longest + "\"\n").socket == longest);
  CheckDiagnostics(ParseDaemonConfigText("[daemon]\nsocket = \"" + longest + "s\"\n", "d.toml"),
                   {{"d.toml", 2, 10, "daemon.socket", "must be at most 107 bytes long"}});
  CheckDiagnostics(ParseDaemonConfigText("[daemon]\nsocket = \"/run/dtrain/\"\n", "d.toml"),
                   {{"d.toml", 2, 10, "daemon.socket", "must name the socket file"}});
}

BOOST_AUTO_TEST_CASE(a_default_socket_too_long_is_reported_where_the_key_belongs) {
  ScopedEnv env;
  const std::string runtime = "/run/" + std::string(100, 'r');
  Environment(env, {{"RUNTIME_DIRECTORY", runtime}});
  const std::string message = "is not set, and its default from the environment, \"" + runtime +
                              "/dtraind.sock\", cannot be used: must be at most 107 bytes long";
  CheckDiagnostics(ParseDaemonConfigText("", "d.toml"),
                   {{"d.toml", 0, 0, "daemon.socket", message}});
  CheckDiagnostics(ParseDaemonConfigText("\n[daemon]\nmax_jobs = 1\n", "d.toml"),
                   {{"d.toml", 2, 1, "daemon.socket", message}});
  BOOST_TEST(MustParse("[daemon]\nsocket = \"/run/d.sock\"\n").socket == "/run/d.sock");
}

BOOST_AUTO_TEST_CASE(log_limits_are_sizes_within_their_bounds) {
  BOOST_TEST(MustParse("[daemon]\nmax_log_line = 8192\n").max_log_line == 8192u);
  BOOST_TEST(MustParse("[daemon]\nlog_quota = \"2 GiB\"\n").log_quota == 2u << 30);
  CheckDiagnostics(
      ParseDaemonConfigText("[daemon]\nmax_log_line = \"2MiB\"\nlog_quota = \"lots\"\n"
                            "[cluster]\n",
                            "d.toml"),
      {{"d.toml", 2, 16, "daemon.max_log_line", "must be from 256 B to 1 MiB, got 2 MiB"},
       {"d.toml", 3, 13, "daemon.log_quota", ""}});
  CheckDiagnostics(ParseDaemonConfigText("[daemon]\nlog_quota = 1000\n", "d.toml"),
                   {{"d.toml", 2, 13, "daemon.log_quota", "must be from 1 MiB to 64 GiB, got 1000 B"}});
}

BOOST_AUTO_TEST_CASE(socket_modes_are_octal_strings_of_permission_bits) {
  for (const auto& [text, mode] : std::vector<std::pair<std::string, unsigned>>{
           {"0660", 0660u}, {"660", 0660u}, {"0777", 0777u}, {"0", 0u}, {"0600", 0600u}}) {
    BOOST_TEST_CONTEXT(text) {
      BOOST_TEST(MustParse("[daemon]\nsocket_mode = \"" + text + "\"\n").socket_mode == mode);
    }
  }
  for (const std::string bad :
       {"\"07777\"", "\"1660\"", "\"0o660\"", "\"\"", "\"rw-rw----\"", "0o660", "660"}) {
    BOOST_TEST_CONTEXT(bad) {
      const Diagnostic d =
          Single(ParseDaemonConfigText("[daemon]\nsocket_mode = " + bad + "\n", "d.toml"));
      BOOST_TEST(d.key == "daemon.socket_mode");
      BOOST_TEST(d.column == 15);
      BOOST_TEST(d.message.starts_with("must be an octal string of permission bits"));
    }
  }
}

BOOST_AUTO_TEST_CASE(listen_addresses_have_the_form_addr_port) {
  for (const std::string good : {"", "0.0.0.0:7070", "127.0.0.1:1", "[::]:65535", "[::1]:7070",
                                 "[fe80::1:2]:80", "node-1.example.org:7070", "localhost:7070"}) {
    BOOST_TEST_CONTEXT(good) {
      BOOST_TEST(MustParse("[cluster]\nlisten = \"" + good + "\"\nkey_file = \"/etc/k\"\n")
                     .listen == good);
    }
  }
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"7070", "must be \"ADDR:PORT\""},
      {"localhost", "must be \"ADDR:PORT\""},
      {"0.0.0.0:0", "must end in a port in [1, 65535]"},
      {"0.0.0.0:65536", "must end in a port in [1, 65535]"},
      {"0.0.0.0:", "must end in a port in [1, 65535]"},
      {"0.0.0.0:http", "must end in a port in [1, 65535]"},
      {"0.0.0.0:+80", "must end in a port in [1, 65535]"},
      {"256.0.0.1:7070", "must have a valid IPv4 address"},
      {"10.0.0:7070", "must have a valid IPv4 address"},
      {"::1:7070", "must have an IPv6 address in brackets"},
      {"[::g]:7070", "must have an IPv6 address inside the brackets"},
      {"[]:7070", "must have an IPv6 address inside the brackets"},
      {":7070", "must have an IPv4 address, an IPv6 address in brackets or a host name"},
      {"-node:7070", "must have an IPv4 address, an IPv6 address in brackets or a host name"},
      {"node..example:7070", "must have an IPv4 address, an IPv6 address in brackets or a host"},
      {"no de:7070", "must have an IPv4 address, an IPv6 address in brackets or a host name"}};
  for (const auto& [text, message] : bad) {
    BOOST_TEST_CONTEXT(text) {
      const Diagnostic d =
          Single(ParseDaemonConfigText("[cluster]\nlisten = \"" + text + "\"\n", "d.toml"));
      BOOST_TEST(d.key == "cluster.listen");
      BOOST_TEST((d.line == 2 && d.column == 10));
      BOOST_TEST(d.message.starts_with(message), d.message);
      BOOST_TEST(d.message.ends_with(", got \"" + text + "\""), d.message);
    }
  }
}

BOOST_AUTO_TEST_CASE(limits_are_checked_at_their_values) {
  const DaemonConfigLoad r = ParseDaemonConfigText(
      "[limits]\njobs_per_user = -1\nmax_priority = 101\npriority_users = [\"a b\", 3]\n"
      "default_memory_limit = \"8GiB\"\nmax_memory_limit = \"4GiB\"\n",
      "l.toml");
  CheckDiagnostics(r, {{"l.toml", 2, 17, "limits.jobs_per_user", "must be an integer in [0, 1024]"},
                       {"l.toml", 3, 16, "limits.max_priority", "must be an integer in [-100, 100]"},
                       {"l.toml", 4, 19, "limits.priority_users", "user 1 must be a user name"},
                       {"l.toml", 4, 26, "limits.priority_users", "user 2 must be a user name"},
                       {"l.toml", 5, 24, "limits.default_memory_limit",
                        "is 8 GiB, more than max_memory_limit (4 GiB)"}});
}

BOOST_AUTO_TEST_CASE(formatted_config_parses_back_to_an_equal_config) {
  ScopedEnv env;
  Environment(env, {{"XDG_RUNTIME_DIR", "/run/user/1000"}, {"HOME", "/users/u"}});
  const DaemonConfigLoad full = LoadDaemonConfig(DaemonPath("full.toml"));
  BOOST_REQUIRE(full.ok());
  const DaemonConfig awkward = MustParse(
      "[daemon]\nsocket = \"/run/with \\\"quotes\\\" and \\\\ back\"\nsocket_mode = \"7\"\n"
      "[workers]\ngrace_seconds = 0.1\n[cluster]\nlisten = \"localhost:1\"\n",
      "odd name.toml");
  for (const DaemonConfig& c : {*full.config, DefaultDaemonConfig(), MustParse(""), awkward}) {
    const std::string text = FormatDaemonConfig(c);
    BOOST_TEST_CONTEXT(text) {
      const DaemonConfig again = MustParse(text, c.source_path);
      BOOST_TEST((again == c));
      BOOST_TEST(FormatDaemonConfig(again) == text);
    }
  }
  const std::string text = FormatDaemonConfig(*full.config);
  BOOST_TEST(text.find("socket_mode = \"0600\"\n") != std::string::npos);
  BOOST_TEST(text.find("grace_seconds = 2.5\n") != std::string::npos);
  BOOST_TEST(text.find("listen = \"[::1]:7070\"\n") != std::string::npos);
  BOOST_TEST(FormatDaemonConfig(awkward).find("socket_mode = \"0007\"\n") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(without_a_key_the_daemon_listens_only_on_loopback_and_has_no_peers) {
  for (const std::string loopback : {"127.0.0.1:7070", "127.1.2.3:7070", "[::1]:7070",
                                     "localhost:7070"}) {
    BOOST_TEST(MustParse("[cluster]\nlisten = \"" + loopback + "\"\n").listen == loopback);
  }
  for (const std::string open : {"0.0.0.0:7070", "10.0.0.1:7070", "[::]:7070", "node:7070"}) {
    BOOST_TEST_CONTEXT(open) {
      const Diagnostic d =
          Single(ParseDaemonConfigText("[cluster]\nlisten = \"" + open + "\"\n", "d.toml"));
      BOOST_TEST(d.key == "cluster.listen");
      BOOST_TEST(d.message.starts_with("is not a loopback address, and no key_file is set"),
                 d.message);
    }
  }
  const Diagnostic peers = Single(ParseDaemonConfigText(
      "[cluster]\nlisten = \"127.0.0.1:7070\"\npeers = [\"127.0.0.1:7071\"]\n", "d.toml"));
  BOOST_TEST(peers.key == "cluster.peers");
  BOOST_TEST(peers.message.starts_with("need key_file"), peers.message);
}

BOOST_AUTO_TEST_CASE(the_http_listener_is_off_by_default_and_needs_a_token_off_loopback) {
  BOOST_TEST(MustParse("").http.empty());
  const DaemonConfig local = MustParse("[daemon]\nhttp = \"127.0.0.1:8470\"\n");
  BOOST_TEST(local.http == "127.0.0.1:8470");
  BOOST_TEST(FormatDaemonConfig(local).find("http = \"127.0.0.1:8470\"\n") != std::string::npos);
  for (const std::string open : {"0.0.0.0:8470", "10.0.0.1:8470", "[::]:8470"}) {
    BOOST_TEST_CONTEXT(open) {
      const Diagnostic d =
          Single(ParseDaemonConfigText("[daemon]\nhttp = \"" + open + "\"\n", "d.toml"));
      BOOST_TEST(d.key == "daemon.http");
      BOOST_TEST(d.message.starts_with("is not a loopback address, and no http_token_file is set"),
                 d.message);
      const DaemonConfig tokened = MustParse("[daemon]\nhttp = \"" + open +
                                             "\"\nhttp_token_file = \"/etc/dtrain/http.token\"\n");
      BOOST_TEST(tokened.http_token_file == "/etc/dtrain/http.token");
    }
  }
  const Diagnostic port = Single(ParseDaemonConfigText("[daemon]\nhttp = \"127.0.0.1\"\n", "d.toml"));
  BOOST_TEST(port.key == "daemon.http");
  const Diagnostic relative = Single(
      ParseDaemonConfigText("[daemon]\nhttp_token_file = \"http.token\"\n", "d.toml"));
  BOOST_TEST(relative.key == "daemon.http_token_file");
}

BOOST_AUTO_TEST_CASE(peers_key_file_name_and_advertise_are_read_checked_and_written_back) {
  const DaemonConfig c = MustParse(
      "[cluster]\nlisten = \"0.0.0.0:7070\"\npeers = [\"10.0.0.2:7070\", \"node-3:7070\"]\n"
      "key_file = \"/etc/dtrain/cluster.key\"\nname = \"node-1\"\nadvertise = \"10.0.0.1\"\n");
  BOOST_TEST((c.peers == std::vector<std::string>{"10.0.0.2:7070", "node-3:7070"}));
  BOOST_TEST(c.key_file == "/etc/dtrain/cluster.key");
  BOOST_TEST(c.name == "node-1");
  BOOST_TEST(c.advertise == "10.0.0.1");
  DaemonConfig again = MustParse(FormatDaemonConfig(c), c.source_path);
  BOOST_TEST((again == c));

  CheckDiagnostics(
      ParseDaemonConfigText("[cluster]\npeers = [\"10.0.0.2\", 7, \"\"]\nkey_file = \"k\"\n"
                            "name = \"a b\"\nadvertise = \"0.0.0.0\"\n",
                            "d.toml"),
      {{"d.toml", 2, 10, "cluster.peers", "peer 1 must be \"ADDR:PORT\""},
       {"d.toml", 2, 22, "cluster.peers", "peer 2 must be a \"HOST:PORT\" string"},
       {"d.toml", 2, 25, "cluster.peers", "peer 3 must be \"HOST:PORT\""},
       {"d.toml", 3, 12, "cluster.key_file", "must be an absolute path"},
       {"d.toml", 4, 8, "cluster.name", "must be letters, digits, hyphens and dots"},
       {"d.toml", 5, 13, "cluster.advertise", "must be an address peers can reach, not 0.0.0.0"}});
  for (const auto& [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"10.0.0.1:7070", "must be an IPv4 address or a host name, without a port"},
           {"::1", "must be an IPv4 address or a host name, without a port"},
           {"10.0.0.300", "must be a valid IPv4 address"}}) {
    const Diagnostic d =
        Single(ParseDaemonConfigText("[cluster]\nadvertise = \"" + text + "\"\n", "d.toml"));
    BOOST_TEST(d.key == "cluster.advertise");
    BOOST_TEST(d.message.starts_with(why), d.message);
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace daemon_config_test
}  // namespace dtrain::config
