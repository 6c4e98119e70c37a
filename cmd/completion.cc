// dtrain completion: print a bash, zsh or fish completion script generated from the command
// tree itself, so completions always match the binary. completions/ holds their output
// (tests/cmd checks the files are current).
//
// Beyond subcommands and options, the scripts complete a job id where a subcommand's first
// positional is one (its name is "job"), from `dtrain list --json --limit 50` run quietly at
// completion time (nothing when no daemon answers), and *.toml files where it is a job file
// (named "job_file"). The values of an option or positional with a fixed list (cmd/choices.h) are
// that list; a command of commands (`sweep`) completes its commands' names first, then the
// options of any of them. Global options (kGlobalGroup) are offered everywhere.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <sstream>

#include "cmd/choices.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"

namespace dtrain::cli {
namespace {

struct OptionInfo {
  std::string long_name;   // without dashes
  std::string short_name;  // without the dash, may be empty
  std::string description;
  bool takes_value;
  std::vector<std::string> choices;  // its values, when they are a fixed list
};

// What a subcommand's first positional argument is.
enum class Positional { kNone, kJob, kJobFile, kFile, kChoices };

struct CommandInfo {
  std::string name;
  std::string description;
  std::vector<OptionInfo> options;
  Positional first = Positional::kNone;
  std::vector<std::string> first_choices;  // kChoices: the values
};

struct Tree {
  std::vector<OptionInfo> root;     // the root command's options (--help, --version, globals)
  std::vector<OptionInfo> globals;  // those of kGlobalGroup, valid after a subcommand too
  std::vector<CommandInfo> commands;
};

// The shell command that prints the ids of the daemon's newest jobs, one per line.
constexpr const char* kJobIds =
    "dtrain list --json --limit 50 2>/dev/null | grep -o '\"id\":[0-9]*' | cut -d: -f2";

OptionInfo Describe(CLI::Option& opt) {
  const auto& shorts = opt.get_snames();
  return {opt.get_lnames().front(), shorts.empty() ? "" : shorts.front(), opt.get_description(),
          opt.get_expected_max() != 0, ChoicesOf(opt)};
}

// Hidden subcommands (the internal `worker`) have no group and are left out.
Tree Describe(CLI::App& root) {
  Tree tree;
  for (CLI::Option* opt : root.get_options()) {
    if (opt->get_lnames().empty()) continue;
    tree.root.push_back(Describe(*opt));
    if (opt->get_group() == kGlobalGroup) tree.globals.push_back(Describe(*opt));
  }
  const auto grouped = [](CLI::App* s) { return !s->get_group().empty(); };
  for (CLI::App* sub : root.get_subcommands(grouped)) {
    CommandInfo cmd{sub->get_name(), sub->get_description(), {}, Positional::kNone, {}};
    // A command of commands (`sweep run`): its first word is one of them, and it takes the
    // options of all of them.
    std::vector<CLI::Option*> options = sub->get_options();
    for (CLI::App* child : sub->get_subcommands(grouped)) {
      cmd.first = Positional::kChoices;
      cmd.first_choices.push_back(child->get_name());
      for (CLI::Option* opt : child->get_options()) {
        const bool known = std::any_of(options.begin(), options.end(), [&](CLI::Option* o) {
          return o->get_name() == opt->get_name();
        });
        if (opt->nonpositional() && !known) options.push_back(opt);
      }
    }
    for (CLI::Option* opt : options) {
      if (!opt->nonpositional()) {
        if (cmd.first == Positional::kNone) {
          const std::string& name = opt->get_name();
          cmd.first_choices = ChoicesOf(*opt);
          cmd.first = !cmd.first_choices.empty() ? Positional::kChoices
                      : name == "job"            ? Positional::kJob
                      : name == "job_file"       ? Positional::kJobFile
                                                 : Positional::kFile;
        }
        continue;
      }
      if (!opt->get_lnames().empty()) cmd.options.push_back(Describe(*opt));
    }
    tree.commands.push_back(std::move(cmd));
  }
  return tree;
}

// Text safe inside single quotes in every shell.
std::string SingleQuoted(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out;
}

// Text safe inside single quotes and inside zsh's [description].
std::string ZshQuoted(const std::string& text) {
  std::string out;
  for (char c : SingleQuoted(text)) {
    if (c == '[' || c == ']') {
      out += c == '[' ? '(' : ')';
    } else if (c == ':') {
      out += "\\:";
    } else {
      out += c;
    }
  }
  return out;
}

// "--a -a --b": every name of the options (with takes_value == only_valued, or all).
std::string Names(const std::vector<OptionInfo>& options, bool only_valued) {
  std::string out;
  for (const OptionInfo& o : options) {
    if (only_valued && !o.takes_value) continue;
    out += (out.empty() ? "--" : " --") + o.long_name;
    if (!o.short_name.empty()) out += " -" + o.short_name;
  }
  return out;
}

// "a b c": a list of values as one word list.
std::string Words(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : " ") + v;
  return out;
}

std::string Bash(const Tree& tree) {
  std::string names, alternatives;
  for (const CommandInfo& c : tree.commands) {
    names += (names.empty() ? "" : " ") + c.name;
    alternatives += (alternatives.empty() ? "" : "|") + c.name;
  }
  const std::string global_valued = Names(tree.globals, true);
  std::ostringstream s;
  s << "# bash completion for dtrain. Generated by `dtrain completion bash`; do not edit.\n"
    << "_dtrain_jobs() {\n"
    << "  " << kJobIds << "\n"
    << "}\n"
    << "_dtrain() {\n"
    << "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
    << "  local sub=\"\" at=0 opts=\"\" valued=\"" << global_valued << "\" first=\"\" word i n=0\n"
    << "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
    << "    case \"${COMP_WORDS[i]}\" in\n";
  for (const OptionInfo& o : tree.globals) {
    if (o.takes_value) s << "      --" << o.long_name << ") i=$((i + 1)) ;;\n";
  }
  s << "      " << alternatives << ") sub=\"${COMP_WORDS[i]}\"; at=$i; break ;;\n"
    << "    esac\n"
    << "  done\n"
    << "  case \"$sub\" in\n"
    << "    \"\") opts=\"" << names << " " << Names(tree.root, false) << "\" ;;\n";
  for (const CommandInfo& c : tree.commands) {
    std::string valued = Names(c.options, true);
    s << "    " << c.name << ") opts=\"" << Names(c.options, false) << " "
      << Names(tree.globals, false) << "\"";
    if (!valued.empty()) s << "; valued=\"$valued " << valued << "\"";
    if (c.first == Positional::kJob) s << "; first=job";
    if (c.first == Positional::kJobFile) s << "; first=toml";
    if (c.first == Positional::kChoices) s << "; first=\"" << Words(c.first_choices) << "\"";
    s << " ;;\n";
  }
  s << "  esac\n"
    << "  case \"$sub $prev\" in\n";
  for (const CommandInfo& c : tree.commands) {
    for (const OptionInfo& o : c.options) {
      if (o.choices.empty()) continue;
      s << "    \"" << c.name << " --" << o.long_name << "\") COMPREPLY=($(compgen -W \""
        << Words(o.choices) << "\" -- \"$cur\")); return ;;\n";
    }
  }
  s << "  esac\n"
    << "  if [[ \" $valued \" == *\" $prev \"* ]]; then\n"
    << "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
    << "    return\n"
    << "  fi\n"
    << "  if [[ -z \"$sub\" || \"$cur\" == -* ]]; then\n"
    << "    COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
    << "    return\n"
    << "  fi\n"
    << "  for ((i = at + 1; i < COMP_CWORD; i++)); do\n"
    << "    word=\"${COMP_WORDS[i]}\"\n"
    << "    if [[ \"$word\" != -* ]]; then\n"
    << "      n=$((n + 1))\n"
    << "    elif [[ \" $valued \" == *\" $word \"* ]]; then\n"
    << "      i=$((i + 1))\n"
    << "    fi\n"
    << "  done\n"
    << "  if [[ $n -eq 0 && \"$first\" == job ]]; then\n"
    << "    COMPREPLY=($(compgen -W \"$(_dtrain_jobs)\" -- \"$cur\"))\n"
    << "  elif [[ $n -eq 0 && \"$first\" == toml ]]; then\n"
    << "    COMPREPLY=($(compgen -f -X '!*.toml' -- \"$cur\") $(compgen -d -- \"$cur\"))\n"
    << "  elif [[ $n -eq 0 && -n \"$first\" ]]; then\n"
    << "    COMPREPLY=($(compgen -W \"$first\" -- \"$cur\"))\n"
    << "  else\n"
    << "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
    << "  fi\n"
    << "}\n"
    << "complete -o filenames -F _dtrain dtrain\n";
  return s.str();
}

// One _arguments spec per option name: '--name[description]:name:_files' for a value, or
// ':name:(a b c)' for a value from a list.
void ZshOption(std::ostringstream& s, const OptionInfo& o, const std::string& indent) {
  const std::string values = o.choices.empty() ? "_files" : "(" + Words(o.choices) + ")";
  const std::string value = o.takes_value ? ":" + o.long_name + ":" + values : "";
  s << " \\\n"
    << indent << "'--" << o.long_name << "[" << ZshQuoted(o.description) << "]" << value << "'";
  if (!o.short_name.empty()) {
    s << " \\\n"
      << indent << "'-" << o.short_name << "[" << ZshQuoted(o.description) << "]" << value << "'";
  }
}

std::string Zsh(const Tree& tree) {
  std::ostringstream s;
  s << "#compdef dtrain\n"
    << "# zsh completion for dtrain. Generated by `dtrain completion zsh`; do not edit.\n"
    << "_dtrain_jobs() {\n"
    << "  local -a ids\n"
    << "  ids=(${(f)\"$(" << kJobIds << ")\"})\n"
    << "  compadd -a ids\n"
    << "}\n"
    << "_dtrain() {\n"
    << "  local curcontext=\"$curcontext\" state line\n"
    << "  local -a commands\n"
    << "  commands=(\n";
  for (const CommandInfo& c : tree.commands) {
    s << "    '" << c.name << ":" << ZshQuoted(c.description) << "'\n";
  }
  s << "  )\n"
    << "  _arguments -C";
  for (const OptionInfo& o : tree.root) ZshOption(s, o, "    ");
  s << " \\\n    '1: :->command'"
    << " \\\n    '*:: :->args'\n"
    << "  case $state in\n"
    << "    command) _describe 'command' commands ;;\n"
    << "    args)\n"
    << "      case $words[1] in\n";
  for (const CommandInfo& c : tree.commands) {
    s << "        " << c.name << ")\n          _arguments";
    for (const OptionInfo& o : c.options) ZshOption(s, o, "            ");
    for (const OptionInfo& o : tree.globals) ZshOption(s, o, "            ");
    switch (c.first) {
      case Positional::kJob:
        s << " \\\n            '1:job:_dtrain_jobs'";
        break;
      case Positional::kJobFile:
        s << " \\\n            '1:job file:_files -g \"*.toml\"'";
        break;
      case Positional::kFile:
        s << " \\\n            '*:file:_files'";
        break;
      case Positional::kChoices:
        s << " \\\n            '1:value:(" << Words(c.first_choices) << ")'";
        break;
      case Positional::kNone:
        break;
    }
    s << " ;;\n";
  }
  s << "      esac ;;\n"
    << "  esac\n"
    << "}\n"
    << "_dtrain \"$@\"\n";
  return s.str();
}

void FishOption(std::ostringstream& s, const std::string& when, const OptionInfo& o) {
  s << "complete -c dtrain" << when << " -l " << o.long_name;
  if (!o.short_name.empty()) s << " -s " << o.short_name;
  if (o.takes_value && o.choices.empty()) s << " -r -F";
  if (o.takes_value && !o.choices.empty()) s << " -r -f -a '" << Words(o.choices) << "'";
  s << " -d '" << SingleQuoted(o.description) << "'\n";
}

std::string Fish(const Tree& tree) {
  std::ostringstream s;
  s << "# fish completion for dtrain. Generated by `dtrain completion fish`; do not edit.\n"
    << "function __dtrain_jobs\n"
    << "    " << kJobIds << "\n"
    << "end\n"
    << "function __dtrain_job_files\n"
    << "    __fish_complete_path (commandline -ct) | string match -r -- '^.*(?:\\.toml|/)(?:\\t.*)?$'\n"
    << "end\n"
    << "complete -c dtrain -f\n";
  for (const OptionInfo& o : tree.globals) FishOption(s, "", o);
  for (const CommandInfo& c : tree.commands) {
    s << "complete -c dtrain -n __fish_use_subcommand -a " << c.name << " -d '"
      << SingleQuoted(c.description) << "'\n";
  }
  for (const CommandInfo& c : tree.commands) {
    const std::string when = " -n '__fish_seen_subcommand_from " + c.name + "'";
    for (const OptionInfo& o : c.options) FishOption(s, when, o);
    switch (c.first) {
      case Positional::kJob:
        s << "complete -c dtrain" << when << " -a '(__dtrain_jobs)'\n";
        break;
      case Positional::kJobFile:
        s << "complete -c dtrain" << when << " -a '(__dtrain_job_files)'\n";
        break;
      case Positional::kFile:
        s << "complete -c dtrain" << when << " -F\n";
        break;
      case Positional::kChoices:
        s << "complete -c dtrain" << when << " -a '" << Words(c.first_choices) << "'\n";
        break;
      case Positional::kNone:
        break;
    }
  }
  return s.str();
}

}  // namespace

void AddCompletionCommand(CLI::App& app, int& exit_code) {
  auto shell = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("completion", "Print a shell completion script");
  Choices(cmd->add_option("shell", *shell, "The shell"), {"bash", "zsh", "fish"})->required();
  cmd->callback([shell, &app, &exit_code] {
    const Tree tree = Describe(app);
    std::cout << (*shell == "bash" ? Bash(tree) : *shell == "zsh" ? Zsh(tree) : Fish(tree));
    exit_code = kExitOk;
  });
}

}  // namespace dtrain::cli
