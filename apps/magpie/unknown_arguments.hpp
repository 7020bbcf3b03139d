#pragma once
// Did-you-mean for the command line. CLI11 keeps the arguments it could not
// place (App::remaining()); a misspelled flag there is the cause of whatever
// error the parse ended with (`--topk 5` leaves `5` to the positional
// `framework`, whose check then fails), so it is reported first, with the
// nearest command or option the parser itself knows.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace magpie::app {

// "unknown option '--topk' (did you mean '--top-k'?)\nRun 'magpie benchmark
// --help' for its options." for the first unknown option or command anywhere
// on the parsed command path; nullopt when every argument was placed.
std::optional<std::string> unknown_argument_message(const CLI::App& app);

// CLI11's failure message with the unknown argument, when there is one, in
// place of the error it caused (for App::failure_message).
std::string failure_message(const CLI::App* app, const CLI::Error& e);

}  // namespace magpie::app
