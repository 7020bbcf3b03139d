#include "analysis/step_annotation.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace magpie::analysis {

std::string_view to_string(Stage s) {
  switch (s) {
    case Stage::kPrefillDecode:
      return "prefilldecode";
    case Stage::kDecode:
      return "decode";
    case Stage::kPrefill:
      return "prefill";
    case Stage::kUnknown:
      break;
  }
  return "unknown";
}

std::string_view output_label(Stage s) {
  switch (s) {
    case Stage::kPrefillDecode:
      return "prefilldecode";
    case Stage::kDecode:
      return "decode_only";
    case Stage::kPrefill:
      return "prefill_only";
    case Stage::kUnknown:
      break;
  }
  return "unknown";
}

std::optional<Stage> parse_stage(std::string_view name) {
  std::string n(name);
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  if (n == "prefilldecode" || n == "pd" || n == "mixed" || n == "prefill_decode") {
    return Stage::kPrefillDecode;
  }
  if (n == "decode" || n == "decode_only") return Stage::kDecode;
  if (n == "prefill" || n == "prefill_only") return Stage::kPrefill;
  return std::nullopt;
}

namespace {

// A tiny cursor over the annotation text; every read is bounds-checked.
struct Scan {
  std::string_view s;
  size_t i = 0;
  bool lit(std::string_view t) {
    if (s.substr(i, t.size()) != t) return false;
    i += t.size();
    return true;
  }
  std::optional<int64_t> num() {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data() + i, s.data() + s.size(), v);
    if (ec != std::errc()) return std::nullopt;
    i = static_cast<size_t>(p - s.data());
    return v;
  }
};

Stage stage_from_counts(int64_t context_requests, int64_t generation_requests) {
  if (context_requests > 0 && generation_requests > 0) return Stage::kPrefillDecode;
  if (context_requests > 0) return Stage::kPrefill;
  if (generation_requests > 0) return Stage::kDecode;
  return Stage::kUnknown;
}

// "context_R(sq…sk…sqsq…sqsk…)" or "context_R(T)" after the prefix word.
std::optional<PhaseTokens> vllm_phase(Scan& sc, std::string_view word) {
  PhaseTokens p;
  if (!sc.lit(word) || !sc.lit("_")) return std::nullopt;
  auto r = sc.num();
  if (!r) return std::nullopt;
  p.requests = *r;
  if (!sc.lit("(")) return std::nullopt;
  if (sc.lit("sq")) {
    auto q = sc.num();
    if (!q || !sc.lit("sk")) return std::nullopt;
    auto k = sc.num();
    if (!k || !sc.lit("sqsq")) return std::nullopt;
    auto qq = sc.num();
    if (!qq || !sc.lit("sqsk")) return std::nullopt;
    auto qk = sc.num();
    if (!qk) return std::nullopt;
    p = {p.requests, *q, *k, *qq, *qk, true};
  } else {
    auto t = sc.num();
    if (!t) return std::nullopt;
    p.sum_q = *t;
  }
  if (!sc.lit(")")) return std::nullopt;
  return p;
}

std::optional<StepAnnotation> parse_vllm(std::string_view name) {
  Scan sc{name};
  if (!sc.lit("execute_")) return std::nullopt;
  StepAnnotation a;
  a.grammar = "vllm";
  if (auto n = sc.num()) {
    a.tokens = *n;
    if (!sc.lit("_")) return std::nullopt;
  }
  auto ctx = vllm_phase(sc, "context");
  if (!ctx || !sc.lit("_")) return std::nullopt;
  auto gen = vllm_phase(sc, "generation");
  if (!gen) return std::nullopt;
  a.context = *ctx;
  a.generation = *gen;
  a.stage = stage_from_counts(ctx->requests, gen->requests);
  a.batch_size = static_cast<double>(ctx->requests + gen->requests);
  if (a.tokens == 0) a.tokens = ctx->sum_q + gen->sum_q;
  return a;
}

// "key=123" anywhere in `text`, as a whole key.
std::optional<double> keyed_number(std::string_view text, std::string_view key) {
  for (size_t at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
    const bool word_start = at == 0 || !std::isalnum(static_cast<unsigned char>(text[at - 1]));
    if (!word_start || text.substr(at + key.size(), 1) != "=") continue;
    Scan sc{text, at + key.size() + 1};
    if (auto v = sc.num()) return static_cast<double>(*v);
  }
  return std::nullopt;
}

// SGLang "step[DECODE bs=32 toks=32]" and ATOM "prefill[bs=4 ...]" / "decode[...]".
std::optional<StepAnnotation> parse_bracketed(std::string_view name) {
  const size_t open = name.find('[');
  if (open == std::string_view::npos || name.back() != ']') return std::nullopt;
  const std::string_view head = name.substr(0, open);
  const std::string_view body = name.substr(open + 1, name.size() - open - 2);
  StepAnnotation a;
  if (head == "step") {
    a.grammar = "sglang";
    const std::string_view kind = body.substr(0, body.find(' '));
    if (kind == "EXTEND" || kind == "PREFILL")
      a.stage = Stage::kPrefill;
    else if (kind == "DECODE")
      a.stage = Stage::kDecode;
    else if (kind == "MIXED")
      a.stage = Stage::kPrefillDecode;
    else
      return std::nullopt;  // IDLE and future kinds carry no model work we can stage
  } else if (head == "prefill" || head == "decode") {
    a.grammar = "atom";
    a.stage = head == "prefill" ? Stage::kPrefill : Stage::kDecode;
  } else {
    return std::nullopt;
  }
  a.batch_size = keyed_number(body, "bs").value_or(keyed_number(body, "batch").value_or(0));
  a.tokens = static_cast<int64_t>(
      keyed_number(body, "toks").value_or(keyed_number(body, "tokens").value_or(0)));
  return a;
}

// "decode_step_3", "prefill_step_0", "decode", "prefill-7", "ProfilerStep#6".
std::optional<StepAnnotation> parse_named_step(std::string_view name) {
  StepAnnotation a;
  if (name.starts_with("ProfilerStep#")) {
    a.grammar = "profiler_step";
    return a;
  }
  std::string n(name);
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  for (auto [word, stage] : {std::pair{std::string_view("prefill"), Stage::kPrefill},
                             std::pair{std::string_view("decode"), Stage::kDecode}}) {
    if (!std::string_view(n).starts_with(word)) continue;
    std::string_view rest = std::string_view(n).substr(word.size());
    if (rest.starts_with("_step") || rest.starts_with("-step")) rest.remove_prefix(5);
    while (!rest.empty() && (rest.front() == '_' || rest.front() == '-' || rest.front() == '#')) {
      rest.remove_prefix(1);
    }
    if (!std::all_of(rest.begin(), rest.end(), [](char c) { return std::isdigit(c); })) {
      return std::nullopt;
    }
    a.grammar = "step_name";
    a.stage = stage;
    return a;
  }
  return std::nullopt;
}

}  // namespace

std::optional<StepAnnotation> parse_step_annotation(std::string_view name) {
  if (name.empty()) return std::nullopt;
  if (auto a = parse_vllm(name)) return a;
  if (auto a = parse_bracketed(name)) return a;
  return parse_named_step(name);
}

}  // namespace magpie::analysis
