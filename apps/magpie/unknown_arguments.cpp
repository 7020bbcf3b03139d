#include "unknown_arguments.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "core/config_keys.hpp"

namespace magpie::app {

namespace {

// "-5" and "-.5" are values, not options.
bool looks_like_option(const std::string& arg) {
  return arg.size() > 1 && arg[0] == '-' && !std::isdigit(static_cast<unsigned char>(arg[1])) &&
         arg[1] != '.';
}

// "magpie results list"
std::string command_path(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::App* a = app; a != nullptr; a = a->get_parent()) names.push_back(a->get_name());
  std::reverse(names.begin(), names.end());
  return fmt::format("{}", fmt::join(names, " "));
}

std::vector<const CLI::App*> commands_of(const CLI::App* app) {
  return app->get_subcommands(
      [](const CLI::App* sub) { return !sub->get_name().empty() && !sub->get_disabled(); });
}

std::vector<std::string> command_names(const CLI::App* app) {
  std::vector<std::string> names;
  for (const auto* sub : commands_of(app)) names.push_back(sub->get_name());
  return names;
}

// Long option names without their dashes ("top-k"), the way the user's typo is
// compared: the dashes are no part of the spelling.
std::vector<std::string> long_names(const CLI::App* app) {
  std::vector<std::string> names;
  for (const auto* opt : app->get_options())
    for (const auto& name : opt->get_lnames()) names.push_back(name);
  return names;
}

bool has_long_option(const CLI::App* app, const std::string& bare) {
  const auto names = long_names(app);
  return std::find(names.begin(), names.end(), bare) != names.end();
}

// Every command below `app` (recursively) that takes `--bare`.
void commands_taking(const CLI::App* app, const std::string& bare, std::vector<std::string>& out) {
  for (const auto* sub : commands_of(app)) {
    if (has_long_option(sub, bare)) out.push_back(command_path(sub));
    commands_taking(sub, bare, out);
  }
}

std::string unknown_option(const CLI::App* level, const CLI::App& root, const std::string& arg) {
  const std::string name = arg.substr(0, arg.find('='));
  const std::string path = command_path(level);
  const std::string fix = fmt::format("Run '{} --help' for its options.", path);
  std::string bare = name;
  bare.erase(0, bare.find_first_not_of('-'));
  // A single letter (-x) is too short to guess from: every other short flag is one edit away.
  if (bare.size() > 1) {
    if (auto near = nearest_key(bare, long_names(level)))
      return fmt::format("unknown option '{}' (did you mean '--{}'?)\n{}", name, *near, fix);
    std::vector<std::string> owners;
    commands_taking(&root, bare, owners);
    if (level->get_parent() != nullptr) owners.erase(std::remove(owners.begin(), owners.end(), path), owners.end());
    if (!owners.empty())
      return fmt::format("unknown option '{}' for '{}': it is an option of '{}' (put it after that command)\n{}",
                         name, path, fmt::join(owners, "', '"), fix);
  }
  return fmt::format("unknown option '{}' for '{}'\n{}", name, path, fix);
}

std::string unknown_command(const CLI::App* level, const std::string& arg) {
  const auto names = command_names(level);
  const std::string path = command_path(level);
  if (auto near = nearest_key(arg, names))
    return fmt::format("unknown command '{}' (did you mean '{}'?)\nRun '{} --help' for the commands.", arg,
                       *near, path);
  return fmt::format("unknown command '{}' for '{}'; the commands are: {}\nRun '{} --help' for what each does.",
                     arg, path, fmt::join(names, ", "), path);
}

}  // namespace

std::optional<std::string> unknown_argument_message(const CLI::App& app) {
  // Walk the parsed command path (magpie → results → list) and report the
  // first argument that was not placed. A word where a command was expected
  // (a level with commands, none given) is a misspelled command, and the
  // arguments after it were meant for that command; an option is checked
  // against the options of the command it follows. Other stray words (a
  // second trace, say) keep CLI11's own message.
  for (const CLI::App* level = &app; level != nullptr;) {
    const auto parsed = level->get_subcommands();
    const bool command_expected = parsed.empty() && !commands_of(level).empty();
    for (const auto& arg : level->remaining(false)) {
      if (looks_like_option(arg)) return unknown_option(level, app, arg);
      if (command_expected) return unknown_command(level, arg);
    }
    level = parsed.empty() ? nullptr : parsed.front();
  }
  return std::nullopt;
}

std::string failure_message(const CLI::App* app, const CLI::Error& e) {
  if (auto message = unknown_argument_message(*app)) return "error: " + *message + "\n";
  return CLI::FailureMessage::simple(app, e);
}

}  // namespace magpie::app
