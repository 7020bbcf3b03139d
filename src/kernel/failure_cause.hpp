#pragma once
// Why a step failed, in one line, and the fix where one is known. A failed
// build, check or timing run leaves its reason somewhere in a log (the last
// line of a Python traceback, a compiler's `error:` line); the console table
// and the report carry that line instead of the command that happened to fail.
#include <string>
#include <string_view>

namespace magpie::kernel {

// The line of a failed command's output (stdout and stderr together) that says
// why, first that applies: the exception line of the last Python traceback;
// the error of a `MAGPIE_LATENCY_JSON:` line; a `magpie_bench:` error line; a
// compiler or linker error (`error:`, `fatal error`, `nvcc fatal`, `ld:`); any
// other line naming an error; the last non-empty line. "" for no output.
// Trimmed and cut to 300 characters.
std::string cause_from_output(std::string_view output);

// What the failed command was, for the fix.
struct FailureContext {
  std::string stage;        // compile, correctness, performance
  std::string interpreter;  // argv[0] when it is a Python interpreter, else ""
  std::string interpreter_path;  // where PATH found it, "" when not found or given as a path
  bool harness = false;          // the built-in harness (python -m magpie_bench)
};

// The fix for a known cause, "" when none is known: a missing Python module
// (which interpreter ran and how to choose another), no usable GPU, an unset
// MAGPIE_* variable, a timeout.
std::string fix_for(std::string_view cause, const FailureContext& context);

}  // namespace magpie::kernel
