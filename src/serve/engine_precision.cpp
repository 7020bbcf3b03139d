#include "serve/engine_precision.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"

namespace magpie::serve {

namespace {

struct PrecisionRow {
  Framework framework;
  std::string precision;
  std::vector<std::string> args;  // empty: this engine has no flag for it
  std::string why_not;            // when args is empty
};

// vLLM and SGLang: fp8 is online weight quantization (`--quantization fp8`),
// fp16/bf16 the activation/weight dtype. fp4 needs a checkpoint quantized
// ahead of time (ModelOpt / MXFP4), which the engine detects from the model
// itself: there is no flag to set. ATOM (ROCm) takes its dtype from the model.
const std::vector<PrecisionRow>& table() {
  static const std::vector<PrecisionRow> rows = {
      {Framework::kVllm, "fp8", {"--quantization", "fp8"}, {}},
      {Framework::kVllm, "fp16", {"--dtype", "float16"}, {}},
      {Framework::kVllm, "bf16", {"--dtype", "bfloat16"}, {}},
      {Framework::kVllm,
       "fp4",
       {},
       "vLLM reads FP4 from a pre-quantized checkpoint; use an FP4 model"},
      {Framework::kSglang, "fp8", {"--quantization", "fp8"}, {}},
      {Framework::kSglang, "fp16", {"--dtype", "float16"}, {}},
      {Framework::kSglang, "bf16", {"--dtype", "bfloat16"}, {}},
      {Framework::kSglang,
       "fp4",
       {},
       "SGLang reads FP4 from a pre-quantized checkpoint; use an FP4 model"},
      {Framework::kAtom,
       "fp8",
       {},
       "ATOM takes its precision from the model; use an FP8 checkpoint"},
      {Framework::kAtom, "fp16", {}, "ATOM takes its precision from the model"},
      {Framework::kAtom, "bf16", {}, "ATOM takes its precision from the model"},
      {Framework::kAtom,
       "fp4",
       {},
       "ATOM takes its precision from the model; use an FP4 checkpoint"},
  };
  return rows;
}

// The public tool's examples also name formats that only a checkpoint
// quantized ahead of time carries (MXFP4/MXFP8, 4-bit weights with 16-bit
// activations): no engine flag turns them on, so they are read like fp4.
bool checkpoint_only(const std::string& precision) {
  return precision == "mxfp4" || precision == "mxfp8" || precision == "w4a16";
}

bool has_flag(const std::vector<std::string>& args, const std::string& flag) {
  return std::any_of(args.begin(), args.end(), [&](const std::string& a) {
    return a == flag || a.rfind(flag + "=", 0) == 0;
  });
}

}  // namespace

bool known_precision(const std::string& precision) {
  return precision == "fp8" || precision == "fp16" || precision == "bf16" || precision == "fp4" ||
         checkpoint_only(precision);
}

PrecisionArgs precision_args(Framework framework, const std::string& precision,
                             const std::vector<std::string>& given_args) {
  if (checkpoint_only(precision))
    return {{}, fmt::format("precision {} is not applied: the engine reads it from a pre-quantized "
                            "checkpoint; use a {} model",
                            precision, precision)};
  const auto& rows = table();
  auto it = std::find_if(rows.begin(), rows.end(), [&](const PrecisionRow& r) {
    return r.framework == framework && r.precision == precision;
  });
  if (it == rows.end())
    throw Error(ErrorKind::kUsage,
                fmt::format("precision '{}': use fp8, fp16, bf16, fp4, mxfp4, mxfp8 or w4a16", precision));
  PrecisionArgs out;
  if (it->args.empty()) {
    out.warning = fmt::format("precision {} is not applied: {}", precision, it->why_not);
    return out;
  }
  if (has_flag(given_args, it->args.front())) {
    out.warning = fmt::format("precision {} is not applied: the engine arguments already set {}",
                              precision, it->args.front());
    return out;
  }
  out.args = it->args;
  return out;
}

}  // namespace magpie::serve
