#pragma once
// `precision` (fp8 | fp16 | bf16 | fp4 | mxfp4 | mxfp8 | w4a16) → each engine's own flags, in one
// table: adding an engine or a precision is one row.
#include <string>
#include <vector>

#include "serve/engine_command.hpp"

namespace magpie::serve {

struct PrecisionArgs {
  std::vector<std::string> args;  // appended to the engine's launch line
  std::string warning;            // set when the precision cannot be applied, and why
};

// `given_args` are the engine arguments already on the line (EXTRA_*_ARGS,
// --engine-arg): a --dtype or --quantization there wins over `precision`.
// Throws Error(kUsage) for a precision name no engine knows.
PrecisionArgs precision_args(Framework framework, const std::string& precision,
                             const std::vector<std::string>& given_args);

// One of the precision names above.
bool known_precision(const std::string& precision);

}  // namespace magpie::serve
