#include "replay/bench_module.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

namespace magpie::replay {
namespace {

constexpr int64_t kIntegerHigh = 16;  // integer tensors that index nothing: small values

std::string py_ints(const std::vector<int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

std::string py_scalar(const ScalarValue& s) {
  switch (s.type) {
    case ScalarValue::Type::kBool:
      return s.b ? "True" : "False";
    case ScalarValue::Type::kInt:
      return std::to_string(s.i);
    case ScalarValue::Type::kFloat:
      if (!s.text.empty() && s.text.find_first_not_of("0123456789.eE+-") == std::string::npos)
        return s.text;
      return fmt::format("float(\"{}\")", s.text);
  }
  return "None";
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * std::max<int64_t>(shape[i], 1);
  return s;
}

std::string py_tensor(const TensorSpec& t, std::optional<int64_t> high) {
  std::string s = fmt::format("dict(shape={}, stride={}, dtype=\"{}\"", py_ints(t.shape),
                              py_ints(t.strides.empty() ? contiguous_strides(t.shape) : t.strides),
                              t.torch_dtype);
  if (high) s += fmt::format(", high={}", *high);
  return s + ")";
}

std::string number_value(const TensorSpec& t) {
  if (t.torch_dtype == "bool") return "True";
  if (t.torch_dtype == "int64") return "2";
  return "0.5";
}

// Kineto does not record the dtype of TensorList elements: take the op's
// other tensors', else what its kernels' names say, else float32.
std::pair<std::string, std::string> guess_list_dtype(const ReplayTarget& t) {
  for (const auto& a : t.arguments) {
    if (a.kind == ArgumentKind::kTensor && a.tensor.is_floating()) {
      return {a.tensor.torch_dtype, "the op's other tensor arguments"};
    }
  }
  for (const auto& k : t.cost.kernels) {
    const auto& n = k.name;
    if (n.find("BFloat16") != std::string::npos || n.find("bfloat16") != std::string::npos ||
        n.find("bf16") != std::string::npos) {
      return {"bfloat16", "the kernel name " + n.substr(0, 80)};
    }
    if (n.find("Half") != std::string::npos || n.find("__half") != std::string::npos ||
        n.find("fp16") != std::string::npos) {
      return {"float16", "the kernel name " + n.substr(0, 80)};
    }
    if (n.find("OpaqueType<2u>") != std::string::npos)
      return {"bfloat16", "2-byte elements in the kernel name"};
    if (n.find("OpaqueType<4u>") != std::string::npos || n.find("<float") != std::string::npos) {
      return {"float32", "the kernel name " + n.substr(0, 80)};
    }
  }
  return {"float32", "nothing (a default)"};
}

bool has_floating_input(const ReplayTarget& t) {
  for (const auto& a : t.arguments) {
    if (a.kind == ArgumentKind::kTensor && a.tensor.is_floating() && a.tensor.numel() > 0)
      return true;
    if (a.kind == ArgumentKind::kTensorList) {
      for (const auto& e : a.tensors) {
        if (e.is_floating() && e.numel() > 0) return true;
      }
    }
  }
  return false;
}

std::optional<int64_t> dim_of(const ReplayTarget& t, const IndexBound& b) {
  if (b.dim_arg < 0) return b.dim;
  const auto i = static_cast<size_t>(b.dim_arg);
  if (i >= t.arguments.size() || t.arguments[i].kind != ArgumentKind::kScalar ||
      t.arguments[i].scalar.type != ScalarValue::Type::kInt) {
    return std::nullopt;
  }
  return t.arguments[i].scalar.i;
}

std::optional<int64_t> bound_of(const TensorSpec& source, int64_t dim) {
  const auto rank = static_cast<int64_t>(source.shape.size());
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank) return std::nullopt;
  return source.shape[static_cast<size_t>(dim)];
}

// High bounds (exclusive) of integer tensors, per argument (and element).
struct Bounds {
  std::vector<std::optional<int64_t>> tensor;
  std::vector<std::vector<std::optional<int64_t>>> element;
};

std::optional<std::string> index_bounds(const ReplayTarget& t, Bounds& out) {
  out.tensor.assign(t.arguments.size(), std::nullopt);
  out.element.assign(t.arguments.size(), {});
  for (const auto& b : t.op->bounds) {
    const auto ia = static_cast<size_t>(b.index_arg);
    const auto sa = static_cast<size_t>(b.source_arg);
    if (ia >= t.arguments.size() || sa >= t.arguments.size() ||
        t.arguments[sa].kind != ArgumentKind::kTensor) {
      return fmt::format("argument {} of {} is not the recorded tensor the indices point into", sa,
                         t.signature.name);
    }
    const auto& source = t.arguments[sa].tensor;
    if (b.per_element) {
      if (t.arguments[ia].kind != ArgumentKind::kTensorList)
        return "the indices are not a recorded TensorList";
      for (size_t j = 0; j < t.arguments[ia].tensors.size(); ++j) {
        out.element[ia].push_back(bound_of(source, static_cast<int64_t>(j)));
      }
      continue;
    }
    auto dim = dim_of(t, b);
    if (!dim) return fmt::format("the dim argument {} has no recorded value", b.dim_arg);
    auto high = bound_of(source, *dim);
    if (!high)
      return fmt::format("dim {} is outside the indexed tensor's {} dims", *dim,
                         source.shape.size());
    if (*high <= 0) return "the indexed dimension is empty";
    out.tensor[ia] = high;
  }
  return std::nullopt;
}

std::optional<int64_t> to_dtype_code(const ReplayTarget& t) {
  for (size_t i = 1; i < std::min<size_t>(t.arguments.size(), 3); ++i) {
    const auto& a = t.arguments[i];
    if (a.kind == ArgumentKind::kScalar && a.scalar.type == ScalarValue::Type::kInt)
      return a.scalar.i;
  }
  return std::nullopt;
}

}  // namespace

std::string scalar_type_name(int64_t code) {
  static constexpr std::array<std::pair<int64_t, std::string_view>, 17> kCodes{{
      {0, "uint8"},
      {1, "int8"},
      {2, "int16"},
      {3, "int32"},
      {4, "int64"},
      {5, "float16"},
      {6, "float32"},
      {7, "float64"},
      {9, "complex64"},
      {10, "complex128"},
      {11, "bool"},
      {15, "bfloat16"},
      {23, "float8_e5m2"},
      {24, "float8_e4m3fn"},
      {25, "float8_e5m2fnuz"},
      {26, "float8_e4m3fnuz"},
      {8, "complex32"},
  }};
  for (const auto& [c, n] : kCodes) {
    if (c == code) return std::string(n);
  }
  return {};
}

std::optional<std::string> prepare_target(ReplayTarget& t) {
  if (!t.op) return "not in the replay table";
  bool has_list = false;
  for (const auto& a : t.arguments) {
    if ((a.kind == ArgumentKind::kTensor || a.kind == ArgumentKind::kNumber) &&
        a.tensor.torch_dtype.empty()) {
      return fmt::format("dtype \"{}\" has no torch equivalent known to replay",
                         a.tensor.kineto_dtype);
    }
    has_list = has_list || a.kind == ArgumentKind::kTensorList;
  }
  if (has_list) {
    auto [dtype, from] = guess_list_dtype(t);
    for (size_t i = 0; i < t.arguments.size(); ++i) {
      auto& a = t.arguments[i];
      if (a.kind != ArgumentKind::kTensorList) continue;
      const bool indices = std::ranges::any_of(t.op->bounds, [&](const IndexBound& b) {
        return b.per_element && static_cast<size_t>(b.index_arg) == i;
      });
      for (auto& e : a.tensors) {
        e.torch_dtype = indices ? "int64" : dtype;
        e.kineto_dtype = "TensorList element";
      }
      t.notes.push_back(
          indices ? std::string("Kineto does not record the dtype of TensorList elements: the "
                                "index tensors are assumed int64.")
                  : fmt::format("Kineto does not record the dtype of TensorList elements: {} "
                                "assumed, from {}.",
                                dtype, from));
    }
  }
  if (!has_floating_input(t)) {
    return "no floating-point tensor input: the harness's correctness gate needs random "
           "floating-point data "
           "(integer-only ops such as position arithmetic are not replayed)";
  }
  Bounds bounds;
  if (auto why = index_bounds(t, bounds)) return *why;
  switch (t.op->style) {
    case CallStyle::kCopyInto:
      if (t.arguments.size() < 2 || t.arguments[0].kind != ArgumentKind::kTensor ||
          t.arguments[1].kind != ArgumentKind::kTensor) {
        return "copy_ without two recorded tensors";
      }
      t.notes.push_back(
          "copy_ writes into a fresh tensor of the destination's shape, strides and dtype "
          "(the harness rejects implementations that modify their inputs).");
      break;
    case CallStyle::kToCopy: {
      auto code = to_dtype_code(t);
      if (!code || scalar_type_name(*code).empty()) {
        return "aten::to without a recorded dtype: a device move (or a no-op), not GPU computation";
      }
      t.notes.push_back(
          fmt::format("aten::to replayed as _to_copy(dtype=torch.{}), the op that runs under it.",
                      scalar_type_name(*code)));
      break;
    }
    case CallStyle::kOutOfPlace:
      t.notes.push_back(
          fmt::format("{} is in-place: replayed as its out-of-place twin aten::{} (same kernel "
                      "family, plus a fresh output) because the harness rejects mutated inputs.",
                      t.signature.name, t.op->name.substr(0, t.op->name.size() - 1)));
      break;
    case CallStyle::kAten:
      break;
  }
  for (const auto& a : t.arguments) {
    if (a.kind == ArgumentKind::kNumber) {
      t.notes.push_back(fmt::format("a Python {} argument's value is not recorded: {} used.",
                                    a.tensor.kineto_dtype, number_value(a.tensor)));
    }
  }
  if (t.op->first_output_only) {
    t.notes.push_back(
        "the op returns a tuple: only its first output is compared (auxiliary outputs such as "
        "log-sum-exp or RNG state differ by backend).");
  }
  t.runs_on_cpu = t.op->runs_on_cpu;
  t.cpu_reason = std::string(t.op->cpu_reason);
  for (const auto& a : t.arguments) {
    if (t.op->family == OpFamily::kGemm && a.kind == ArgumentKind::kTensor &&
        a.tensor.torch_dtype.starts_with("float8")) {
      t.runs_on_cpu = false;
      t.cpu_reason = "no CPU kernel for float8 matrix multiplication";
    }
  }
  return std::nullopt;
}

std::string bench_module_text(const ReplayTarget& t, std::string_view trace_name) {
  Bounds bounds;
  index_bounds(t, bounds);
  std::string args;
  for (size_t i = 0; i < t.arguments.size(); ++i) {
    const auto& a = t.arguments[i];
    std::string v;
    switch (a.kind) {
      case ArgumentKind::kTensor:
        if (bounds.tensor[i]) {
          v = py_tensor(a.tensor, *bounds.tensor[i]);
        } else {
          v = py_tensor(a.tensor, a.tensor.is_integer() ? std::optional<int64_t>(kIntegerHigh)
                                                        : std::nullopt);
        }
        break;
      case ArgumentKind::kTensorList: {
        std::vector<std::string> e;
        for (size_t j = 0; j < a.tensors.size(); ++j) {
          int64_t high = -1;  // -1: not an index tensor
          if (j < bounds.element[i].size() && bounds.element[i][j]) high = *bounds.element[i][j];
          if (high < 0 && a.tensors[j].is_integer()) high = kIntegerHigh;
          e.push_back(
              py_tensor(a.tensors[j], high >= 0 ? std::optional<int64_t>(high) : std::nullopt));
        }
        v = fmt::format("[{}]", fmt::join(e, ", "));
        break;
      }
      case ArgumentKind::kNumber:
        v = number_value(a.tensor);
        break;
      case ArgumentKind::kScalar:
        v = py_scalar(a.scalar);
        break;
      case ArgumentKind::kScalarList: {
        std::vector<std::string> e;
        for (const auto& s : a.list) e.push_back(py_scalar(s));
        v = fmt::format("[{}]", fmt::join(e, ", "));
        break;
      }
      case ArgumentKind::kNone:
        v = "None";
        break;
    }
    const char* kind = to_string(a.kind);
    if (t.op->style == CallStyle::kCopyInto && i == 0) kind = "dst";
    args += fmt::format("    (\"{}\", {}),\n", kind, v);
  }

  std::string op_name(t.op->name);
  std::string call;
  switch (t.op->style) {
    case CallStyle::kAten:
    case CallStyle::kOutOfPlace:
      if (t.op->style == CallStyle::kOutOfPlace) op_name.pop_back();
      call = "    return _first(_aten(_values(inputs)))\n";
      break;
    case CallStyle::kCopyInto:
      call =
          "    dst = ARGS[0][1]\n"
          "    out = torch.empty_strided(dst[\"shape\"], dst[\"stride\"], dtype=getattr(torch, "
          "dst[\"dtype\"]),\n"
          "                              device=inputs[0].device)\n"
          "    out.copy_(inputs[0])\n"
          "    return out\n";
      break;
    case CallStyle::kToCopy:
      op_name = "_to_copy";
      call = fmt::format("    return torch.ops.aten._to_copy(inputs[0], dtype=torch.{})\n",
                         scalar_type_name(*to_dtype_code(t)));
      break;
  }

  std::string notes;
  for (const auto& n : t.notes) notes += "  - " + n + "\n";
  const std::string domain = t.op->domain == InputDomain::kPositive ? "positive" : "normal";

  return fmt::format(
      R"PY("""magpie replay: {name} from {trace} (rank {rank} by GPU time).

Recorded arguments: {described}
Trace cost: {calls} calls, {total_us:.1f} us of GPU work in all, {mean_us:.2f} us per call
(note.md has the kernels).{notes_head}
{notes}
This module is a bench_target for `magpie compare -k compare.yaml`: get_inputs()
builds the recorded shapes, strides and dtypes from torch's global random
generator (the harness seeds it per seed), and replay(*inputs) calls the op.
candidate.py starts as a copy of it: edit its `replay`. Needs only torch.
"""
import torch

OP = "{op}"
FIRST_OUTPUT_ONLY = {first}
DOMAIN = "{domain}"  # floats: "normal" ~ N(0, 1); "positive" ~ U(0.5, 1.5) (log, sqrt, pow, div)
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

# One entry per recorded argument, in the op's schema order: (kind, value).
# Tensors: shape, stride, dtype, and `high` (exclusive) for integer tensors.
ARGS = [
{args}]


def _make(spec):
    shape, stride, dtype = spec["shape"], spec["stride"], getattr(torch, spec["dtype"])
    size = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if all(shape) else 0
    if "high" in spec:
        base = torch.randint(0, spec["high"], (size,), device=DEVICE).to(dtype)
    elif dtype == torch.bool:
        base = torch.rand(size, device=DEVICE) < 0.5
    elif dtype.is_floating_point or dtype.is_complex:
        base = torch.rand(size, device=DEVICE) + 0.5 if DOMAIN == "positive" else torch.randn(size, device=DEVICE)
        base = base.to(dtype)
    else:
        base = torch.randint(0, 16, (size,), device=DEVICE).to(dtype)
    return torch.as_strided(base, shape, stride)


def get_inputs():
    """The recorded tensor arguments (a TensorList is one list), fresh random data."""
    out = []
    for kind, value in ARGS:
        if kind == "tensor":
            out.append(_make(value))
        elif kind == "tensors":
            out.append([_make(v) for v in value])
    return out


def _values(inputs):
    """Every recorded argument, with `inputs` in the tensor slots."""
    it = iter(inputs)
    return [next(it) if kind in ("tensor", "tensors") else value for kind, value in ARGS]


def _fits(kind, value, typ):
    """0 = the schema type takes the recorded argument, 1 = takes it by conversion, None = not at all."""
    base = typ[len("Optional["):-1] if typ.startswith("Optional[") else typ
    if kind == "none":
        return 0 if base != typ else None
    if kind == "tensor":
        return 0 if base == "Tensor" else None
    if kind == "tensors":
        return 0 if base in ("List[Tensor]", "List[Optional[Tensor]]") else None
    if kind == "number":
        return 0 if base in ("number", "float", "int", "bool", "complex") else (1 if base == "Tensor" else None)
    if kind == "scalar":
        if isinstance(value, bool):
            return 0 if base in ("bool", "number") else None
        if isinstance(value, int):
            return 0 if base in ("int", "number", "SymInt") else (1 if base == "float" else None)
        return 0 if base in ("float", "number") else None
    if kind == "list":
        return 0 if base.startswith("List[") and "Tensor" not in base else None
    return None


_RESOLVED = []


def _resolve():
    """The overload of aten::OP whose schema takes the recorded arguments (the trace names no overload)."""
    packet = getattr(torch.ops.aten, OP)
    best = None
    for name in packet.overloads():
        overload = getattr(packet, name)
        schema = overload._schema.arguments
        if len(schema) != len(ARGS):
            continue
        penalty, plan = 0, []
        for (kind, value), arg in zip(ARGS, schema):
            fit, default = _fits(kind, value, str(arg.type)), False
            if fit is None and kind == "none" and arg.has_default_value():
                fit, default = 1, True  # an unrecorded type (str, Device): the schema's default
            if fit is None:
                break
            penalty += fit
            # An out= argument (the trace recorded the out overload): written to, so the call
            # gets a fresh tensor of its layout instead of an input it would modify.
            fresh = kind == "tensor" and arg.kwarg_only and arg.alias_info is not None and arg.alias_info.is_write
            plan.append((arg.name, arg.kwarg_only, default, arg.default_value if default else None, fresh))
        else:
            if best is None or penalty < best[0]:
                best = (penalty, overload, plan)
    if best is None:
        raise RuntimeError("no overload of aten::%s takes the recorded arguments %s"
                           % (OP, [kind for kind, _ in ARGS]))
    return best[1], best[2]


def _aten(values):
    if not _RESOLVED:
        _RESOLVED.append(_resolve())
    overload, plan = _RESOLVED[0]
    args, kwargs = [], {{}}
    for value, (name, kwarg_only, default, default_value, fresh) in zip(values, plan):
        value = default_value if default else (torch.empty_like(value) if fresh else value)
        if kwarg_only:
            kwargs[name] = value
        else:
            args.append(value)
    return overload(*args, **kwargs)


def _first(out):
    return out[0] if FIRST_OUTPUT_ONLY and isinstance(out, (tuple, list)) else out


def replay(*inputs):
    """{name} on the recorded arguments (the implementation to time and compare)."""
{call}

if __name__ == "__main__":
    torch.manual_seed(0)
    result = replay(*get_inputs())
    for i, r in enumerate(result if isinstance(result, (tuple, list)) else [result]):
        if torch.is_tensor(r):
            print("output %d: %s %s on %s" % (i, r.dtype, list(r.shape), r.device))
)PY",
      fmt::arg("name", t.signature.name), fmt::arg("trace", trace_name), fmt::arg("rank", t.rank),
      fmt::arg("described", describe_arguments(t.arguments)), fmt::arg("calls", t.cost.calls),
      fmt::arg("total_us", static_cast<double>(t.cost.total_ns) / 1e3),
      fmt::arg("mean_us", t.cost.mean_ns_per_call() / 1e3),
      fmt::arg("notes_head", t.notes.empty() ? "" : "\nAssumptions:"), fmt::arg("notes", notes),
      fmt::arg("op", op_name), fmt::arg("first", t.op->first_output_only ? "True" : "False"),
      fmt::arg("domain", domain), fmt::arg("args", args), fmt::arg("call", call));
}

}  // namespace magpie::replay
