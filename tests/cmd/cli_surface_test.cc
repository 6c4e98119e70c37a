// The CLI's surface matches its one command table: --help of every subcommand, the committed
// completion scripts (completions/), and the man page (man/dtrain.1).
#include <boost/test/unit_test.hpp>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "cmd/commands.h"
#include "common/process.h"
#include "common/temp_dir.h"

namespace dtrain::cli {
namespace cli_surface_test {

using dtrain::testing::ReadFile;
using dtrain::testing::RunProcess;
using dtrain::testing::TempDir;

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  BOOST_REQUIRE_MESSAGE(value != nullptr, name << " is not set (run through ctest)");
  return value;
}

struct Command {
  std::string name;
  std::vector<std::string> long_options;  // "--db"
};

// The long options of the root command in kGlobalGroup.
std::vector<std::string> GlobalOptions() {
  int exit_code = 0;
  std::unique_ptr<CLI::App> app = BuildApp(exit_code);
  std::vector<std::string> out;
  for (const CLI::Option* opt : app->get_options()) {
    if (opt->get_group() != kGlobalGroup) continue;
    for (const std::string& l : opt->get_lnames()) out.push_back("--" + l);
  }
  return out;
}

std::vector<Command> CommandTable() {
  int exit_code = 0;
  std::unique_ptr<CLI::App> app = BuildApp(exit_code);
  std::vector<Command> out;
  const auto grouped = [](const CLI::App* s) { return !s->get_group().empty(); };
  const auto add = [&out](const std::string& name, const CLI::App& sub) {
    Command c{name, {}};
    for (const CLI::Option* opt : sub.get_options()) {
      for (const std::string& l : opt->get_lnames()) c.long_options.push_back("--" + l);
    }
    out.push_back(std::move(c));
  };
  for (const CLI::App* sub : app->get_subcommands(grouped)) {
    add(sub->get_name(), *sub);
    // A command of commands: each of them as "sweep run".
    for (const CLI::App* child : sub->get_subcommands(grouped)) {
      add(sub->get_name() + " " + child->get_name(), *child);
    }
  }
  return out;
}

// The man page's text from `header` to the next section header.
std::string ManPart(const std::string& page, const std::string& header) {
  const auto begin = page.find(header);
  if (begin == std::string::npos) return "";
  auto end = page.find("\n.S", begin + header.size());
  return page.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// roff writes a literal "-" as "\-".
std::string RoffDashes(const std::string& option) {
  std::string out;
  for (char c : option) out += c == '-' ? std::string("\\-") : std::string(1, c);
  return out;
}

BOOST_AUTO_TEST_SUITE(cli_surface)

BOOST_AUTO_TEST_CASE(the_table_has_the_documented_subcommands) {
  std::vector<std::string> names;
  for (const Command& c : CommandTable()) names.push_back(c.name);
  for (const char* expected :
       {"run",          "submit",       "status",       "list",        "cancel",     "wait",
        "logs",         "metrics",      "compare",      "checkpoints", "export",     "validate",
        "predict",      "eval",         "convert",      "version",     "completion", "sweep run",
        "sweep submit", "sweep status", "sweep cancel", "sweep best",  "sweep list"}) {
    BOOST_TEST_CONTEXT(expected) {
      BOOST_TEST((std::find(names.begin(), names.end(), expected) != names.end()));
    }
  }
}

BOOST_AUTO_TEST_CASE(help_of_every_subcommand_lists_its_options) {
  TempDir dir;
  const std::string bin = Env("DTRAIN_BIN");
  const auto top = RunProcess({bin, "--help"}, dir.Path(""));
  BOOST_TEST(top.exit_code == 0);
  BOOST_TEST(!GlobalOptions().empty());
  for (const std::string& opt : GlobalOptions()) {
    BOOST_TEST(top.out.find(opt) != std::string::npos, opt);
  }
  for (const Command& c : CommandTable()) {
    BOOST_TEST_CONTEXT("dtrain " << c.name << " --help") {
      BOOST_TEST(top.out.find(c.name.substr(0, c.name.find(' '))) != std::string::npos);
      std::vector<std::string> argv = {bin};
      for (std::size_t at = 0; at != std::string::npos;) {  // "sweep run": two words
        const std::size_t space = c.name.find(' ', at);
        argv.push_back(c.name.substr(at, space == std::string::npos ? space : space - at));
        at = space == std::string::npos ? space : space + 1;
      }
      argv.push_back("--help");
      const auto help = RunProcess(argv, dir.Path(""));
      BOOST_TEST(help.exit_code == 0);
      for (const std::string& opt : c.long_options) {
        BOOST_TEST(help.out.find(opt) != std::string::npos, opt);
      }
    }
  }
}

// A command line that does not parse is reported like every other error, with the help to read.
BOOST_AUTO_TEST_CASE(a_bad_command_line_is_an_error_naming_the_commands_help) {
  TempDir dir;
  const std::string bin = Env("DTRAIN_BIN");
  const struct {
    std::vector<std::string> args;
    std::string said, help;
  } cases[] = {{{"status", "abc"}, "job = abc", "dtrain status --help"},
               {{"logs", "1", "--bogus"}, "--bogus", "dtrain logs --help"},
               {{}, "A subcommand is required", "dtrain --help"},
               {{"stauts"}, "unknown command 'stauts' (did you mean 'status'?)", "dtrain --help"},
               {{"frobnicate", "3"}, "unknown command 'frobnicate'\n", "dtrain --help"},
               // A command of commands: its own commands, its own help; and its command's.
               {{"sweep", "rnu", "s.toml"},
                "unknown command 'rnu' (did you mean 'run'?)",
                "dtrain sweep --help"},
               {{"sweep"}, "A subcommand is required", "dtrain sweep --help"},
               {{"sweep", "run"}, "sweep_file is required", "dtrain sweep run --help"}};
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.help) {
      std::vector<std::string> argv = {bin};
      argv.insert(argv.end(), c.args.begin(), c.args.end());
      const auto r = RunProcess(argv, dir.Path(""));
      BOOST_TEST(r.exit_code == 2);
      BOOST_TEST(r.err.rfind("dtrain: error: ", 0) == 0u, r.err);
      BOOST_TEST(r.err.find(c.said) != std::string::npos, r.err);
      BOOST_TEST(r.err.find("Run '" + c.help + "' for more information.") != std::string::npos,
                 r.err);
    }
  }
}

BOOST_AUTO_TEST_CASE(committed_completions_are_what_the_binary_generates) {
  TempDir dir;
  const std::string bin = Env("DTRAIN_BIN");
  const std::string source = Env("DTRAIN_SOURCE_DIR");
  for (const char* shell : {"bash", "zsh", "fish"}) {
    BOOST_TEST_CONTEXT(shell) {
      const auto generated = RunProcess({bin, "completion", shell}, dir.Path(""));
      BOOST_TEST(generated.exit_code == 0);
      const std::string committed =
          ReadFile(source + "/completions/dtrain." + std::string(shell));
      BOOST_TEST(!committed.empty());
      BOOST_TEST(generated.out == committed,
                 "regenerate with: dtrain completion " << shell << " > completions/dtrain."
                                                       << shell);
      for (const Command& c : CommandTable()) {
        BOOST_TEST(committed.find(c.name.substr(c.name.rfind(' ') + 1)) != std::string::npos,
                   c.name);
      }
    }
  }
  // The bash script completes subcommands and their options.
  const std::string script = source + "/completions/dtrain.bash";
  auto complete = [&](const std::string& words, int cword) {
    return RunProcess({"/bin/bash", "-c",
                       "source '" + script + "'; COMP_WORDS=(" + words + "); COMP_CWORD=" +
                           std::to_string(cword) + "; _dtrain; echo \"${COMPREPLY[*]}\""},
                      dir.Path(""))
        .out;
  };
  BOOST_TEST(complete("dtrain va", 1) == "validate\n");
  BOOST_TEST(complete("dtrain run --re", 2) == "--resume\n");
  BOOST_TEST(complete("dtrain export 3 --o", 3) == "--output\n");
  BOOST_TEST(complete("dtrain --socket /x.sock st", 3) == "status\n");
  BOOST_TEST(complete("dtrain status --so", 2) == "--socket\n");
  BOOST_TEST(complete("dtrain sweep ''", 2) == "run submit status cancel best list\n");
  BOOST_TEST(complete("dtrain sweep run --dr", 3) == "--dry-run\n");

  const auto loaded = RunProcess(
      {"/bin/bash", "-c", "source '" + script + "' && complete -p dtrain"}, dir.Path(""));
  BOOST_TEST(loaded.exit_code == 0, loaded.err);
  BOOST_TEST(loaded.out == "complete -o filenames -F _dtrain dtrain\n");

  // Job ids come from `dtrain list --json` (here a shell function standing in for the binary);
  // job files are *.toml.
  auto complete_in = [&](const std::string& words, int cword) {
    const std::string fake_list =
        "dtrain() { [[ \"$*\" == 'list --json --limit 50' ]] && "
        "echo '[{\"id\":7,\"workers\":[{\"pid\":9}]},{\"id\":12}]'; }; ";
    return RunProcess({"/bin/bash", "-c",
                       fake_list + "cd '" + dir.Path("") + "' && source '" + script +
                           "'; COMP_WORDS=(" + words + "); COMP_CWORD=" +
                           std::to_string(cword) + "; _dtrain; echo \"${COMPREPLY[*]}\""},
                      dir.Path(""))
        .out;
  };
  dir.Write("a.toml", "");
  dir.Write("b.txt", "");
  BOOST_TEST(complete_in("dtrain status ''", 2) == "7 12\n");
  BOOST_TEST(complete_in("dtrain logs -f --tail 5 1", 5) == "12\n");
  BOOST_TEST(complete_in("dtrain --socket s wait ''", 4) == "7 12\n");
  BOOST_TEST(complete_in("dtrain submit ''", 2).find("a.toml") != std::string::npos);
  BOOST_TEST(complete_in("dtrain submit ''", 2).find("b.txt") == std::string::npos);
  BOOST_TEST(complete_in("dtrain export 7 -o ''", 4).find("b.txt") != std::string::npos);

  // Values from a fixed list are that list, never file names.
  BOOST_TEST(complete_in("dtrain metrics 7 --format ''", 4) == "table csv json\n");
  BOOST_TEST(complete_in("dtrain metrics 7 --format c", 4) == "csv\n");
  BOOST_TEST(complete_in("dtrain predict m.dtm --format ''", 4) == "csv json npy\n");
  BOOST_TEST(complete_in("dtrain eval m.dtm --data-format ''", 4) == "idx csv libsvm npy\n");
  BOOST_TEST(complete_in("dtrain completion ''", 2) == "bash zsh fish\n");
  const std::string states = complete_in("dtrain list --state ''", 3);
  for (const char* state : {"queued", "running", "succeeded", "failed", "cancelled"}) {
    BOOST_TEST(states.find(state) != std::string::npos, state << " in " << states);
  }
  BOOST_TEST(states.find("a.toml") == std::string::npos, states);
}

BOOST_AUTO_TEST_CASE(the_man_page_documents_every_subcommand_and_option) {
  const std::string page = ReadFile(Env("DTRAIN_SOURCE_DIR") + "/man/dtrain.1");
  BOOST_REQUIRE(!page.empty());
  for (const Command& c : CommandTable()) {
    BOOST_TEST_CONTEXT("dtrain " << c.name) {
      const std::string section = ManPart(page, ".SS \"dtrain " + c.name);
      BOOST_TEST(!section.empty(), "man/dtrain.1 has no .SS \"dtrain " << c.name << "\"");
      for (const std::string& opt : c.long_options) {
        if (opt == "--help") continue;
        BOOST_TEST(section.find(RoffDashes(opt)) != std::string::npos, opt);
      }
    }
  }
  for (const std::string& opt : GlobalOptions()) {
    BOOST_TEST(ManPart(page, ".SH OPTIONS").find(RoffDashes(opt)) != std::string::npos, opt);
  }
  const std::string exit_status = ManPart(page, ".SH EXIT STATUS");
  for (const char* code : {"0", "1", "2", "3", "4", "130"}) {
    BOOST_TEST(exit_status.find(".B " + std::string(code) + "\n") != std::string::npos, code);
  }
  const std::string environment = ManPart(page, ".SH ENVIRONMENT");
  for (const char* variable : {"DTRAIN_SOCKET", "XDG_RUNTIME_DIR", "NO_COLOR"}) {
    BOOST_TEST(environment.find(variable) != std::string::npos, variable);
  }
  BOOST_TEST(ManPart(page, ".SH FILES").find("/run/dtrain/dtraind.sock") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_surface_test
}  // namespace dtrain::cli
