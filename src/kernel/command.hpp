#pragma once
// Commands as Magpie's YAML writes them: a string (split on whitespace), a
// list of strings (one argv) or a list of lists (several argvs, run in order);
// and $VAR / ${VAR} expansion in paths and commands.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace magpie::kernel {

using Command = std::vector<std::string>;  // one argv
using CommandList = std::vector<Command>;  // run in order; stop at the first failure

// Returns the value of a variable, or nullopt when unset.
using VarLookup = std::function<std::optional<std::string>(const std::string&)>;
VarLookup environment_lookup();  // getenv

// Expands $NAME and ${NAME}; unset variables are left as written (like
// Python's os.path.expandvars, which Magpie uses), so a typo stays visible.
std::string expand_vars(std::string_view text, const VarLookup& lookup);

// Splits on whitespace, honouring single and double quotes (no other shell syntax).
Command split_command(std::string_view text);

// Quotes an argv for logs and reports so it can be pasted into a shell.
std::string join_command(const Command& argv);

}  // namespace magpie::kernel
