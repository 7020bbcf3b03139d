#include "replay/op_arguments.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <utility>

namespace magpie::replay {
namespace {

using nlohmann::json;

// Python-number arguments: a Python float/int/bool passed where the schema
// takes a Tensor is recorded with its wrapped tensor's dtype and no dims.
bool is_wrapped_number_dtype(std::string_view t) {
  return t == "double" || t == "long int" || t == "bool" || t == "c10::complex<double>";
}

std::optional<json> parse_json(std::string_view text) {
  if (text.empty()) return json::array();
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_array()) return std::nullopt;
  return j;
}

std::optional<std::vector<int64_t>> int_list(const json& j) {
  if (!j.is_array()) return std::nullopt;
  std::vector<int64_t> out;
  for (const auto& v : j) {
    if (!v.is_number_integer()) return std::nullopt;
    out.push_back(v.get<int64_t>());
  }
  return out;
}

bool is_list_of_lists(const json& j) { return j.is_array() && !j.empty() && j.front().is_array(); }

std::optional<ScalarValue> parse_scalar(std::string_view text) {
  ScalarValue v;
  v.text = std::string(text);
  if (text == "True" || text == "False") {
    v.type = ScalarValue::Type::kBool;
    v.b = text == "True";
    return v;
  }
  int64_t i = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), i);
  if (ec == std::errc{} && end == text.data() + text.size()) {
    v.type = ScalarValue::Type::kInt;
    v.i = i;
    return v;
  }
  std::string s(text);
  char* stop = nullptr;
  double f = std::strtod(s.c_str(), &stop);
  if (s.empty() || stop != s.c_str() + s.size()) return std::nullopt;
  v.type = ScalarValue::Type::kFloat;
  v.f = f;
  return v;
}

std::optional<std::vector<ScalarValue>> parse_scalar_list(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_array()) return std::nullopt;
  std::vector<ScalarValue> out;
  for (const auto& v : j) {
    if (!v.is_number() && !v.is_boolean()) return std::nullopt;
    auto s = parse_scalar(v.is_boolean() ? (v.get<bool>() ? "True" : "False") : v.dump());
    if (!s) return std::nullopt;
    out.push_back(*s);
  }
  return out;
}

std::string join_ints(const std::vector<int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

bool contiguous(const TensorSpec& t) {
  if (t.strides.empty()) return true;
  int64_t expect = 1;
  for (size_t i = t.shape.size(); i-- > 0;) {
    if (t.shape[i] != 1 && t.strides[i] != expect) return false;
    expect *= t.shape[i];
  }
  return true;
}

std::string describe(const TensorSpec& t) {
  std::string s = fmt::format("{}{}", t.torch_dtype.empty() ? t.kineto_dtype : t.torch_dtype,
                              join_ints(t.shape));
  if (!contiguous(t)) s += " strides " + join_ints(t.strides);
  return s;
}

}  // namespace

const char* to_string(ArgumentKind kind) {
  switch (kind) {
    case ArgumentKind::kTensor:
      return "tensor";
    case ArgumentKind::kNumber:
      return "number";
    case ArgumentKind::kScalar:
      return "scalar";
    case ArgumentKind::kScalarList:
      return "list";
    case ArgumentKind::kTensorList:
      return "tensors";
    case ArgumentKind::kNone:
      return "none";
  }
  return "none";
}

std::string torch_dtype_name(std::string_view t) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 16> kNames{{
      {"float", "float32"},
      {"double", "float64"},
      {"c10::Half", "float16"},
      {"c10::BFloat16", "bfloat16"},
      {"long int", "int64"},
      {"int", "int32"},
      {"short int", "int16"},
      {"signed char", "int8"},
      {"unsigned char", "uint8"},
      {"bool", "bool"},
      {"c10::Float8_e4m3fn", "float8_e4m3fn"},
      {"c10::Float8_e5m2", "float8_e5m2"},
      {"c10::Float8_e4m3fnuz", "float8_e4m3fnuz"},
      {"c10::Float8_e5m2fnuz", "float8_e5m2fnuz"},
      {"c10::complex<float>", "complex64"},
      {"c10::complex<double>", "complex128"},
  }};
  for (const auto& [k, v] : kNames) {
    if (k == t) return std::string(v);
  }
  return {};
}

bool TensorSpec::is_floating() const {
  return torch_dtype.starts_with("float") || torch_dtype.starts_with("bfloat") ||
         torch_dtype.starts_with("complex");
}

bool TensorSpec::is_integer() const {
  return torch_dtype.starts_with("int") || torch_dtype.starts_with("uint");
}

int64_t TensorSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

ParsedArgs parse_op_arguments(const RecordedArgs& recorded) {
  ParsedArgs out;
  auto dims = parse_json(recorded.input_dims);
  auto types = parse_json(recorded.input_type);
  auto strides = parse_json(recorded.input_strides);
  auto concrete = parse_json(recorded.concrete_inputs);
  if (!dims || !types) {
    out.error = "unreadable \"Input Dims\"/\"Input type\" args";
    return out;
  }
  if (!strides) strides = json::array();
  if (!concrete) concrete = json::array();
  if (recorded.input_type.empty()) {
    out.error = "no \"Input type\" recorded: record the trace with record_shapes=True";
    return out;
  }
  if (dims->size() != types->size()) {
    out.error = fmt::format("\"Input Dims\" has {} entries, \"Input type\" {}", dims->size(),
                            types->size());
    return out;
  }
  for (size_t i = 0; i < types->size(); ++i) {
    const json& ty = (*types)[i];
    const json& dj = (*dims)[i];
    const json* sj = i < strides->size() ? &(*strides)[i] : nullptr;
    const std::string type = ty.is_string() ? ty.get<std::string>() : "";
    const std::string value =
        i < concrete->size() && (*concrete)[i].is_string() ? (*concrete)[i].get<std::string>() : "";
    OpArgument a;
    if (type == "TensorList" || type == "GenericList" || is_list_of_lists(dj)) {
      a.kind = ArgumentKind::kTensorList;
      if (!dj.is_array()) {
        out.error = fmt::format("argument {}: TensorList without dims", i);
        return out;
      }
      for (size_t e = 0; e < dj.size(); ++e) {
        TensorSpec t;
        auto shape = int_list(dj[e]);
        if (!shape) {
          out.error = fmt::format("argument {}: unreadable TensorList dims", i);
          return out;
        }
        t.shape = *shape;
        if (sj && sj->is_array() && e < sj->size()) {
          if (auto s = int_list((*sj)[e]); s && s->size() == t.shape.size()) t.strides = *s;
        }
        a.tensors.push_back(std::move(t));  // element dtype: not recorded (the caller assumes one)
      }
    } else if (type == "Scalar") {
      if (value.empty()) {
        a.kind = ArgumentKind::kNone;
      } else {
        auto s = parse_scalar(value);
        if (!s) {
          out.error = fmt::format("argument {}: unreadable Scalar value \"{}\"", i, value);
          return out;
        }
        a.kind = ArgumentKind::kScalar;
        a.scalar = *s;
      }
    } else if (type == "ScalarList") {
      if (value.empty()) {
        a.kind = ArgumentKind::kNone;
      } else {
        auto l = parse_scalar_list(value);
        if (!l) {
          out.error = fmt::format("argument {}: unreadable ScalarList value \"{}\"", i, value);
          return out;
        }
        a.kind = ArgumentKind::kScalarList;
        a.list = *l;
      }
    } else if (type.empty()) {
      a.kind = ArgumentKind::kNone;
    } else {
      auto shape = int_list(dj);
      if (!shape) {
        out.error = fmt::format("argument {}: unreadable dims for type \"{}\"", i, type);
        return out;
      }
      a.tensor.kineto_dtype = type;
      a.tensor.torch_dtype = torch_dtype_name(type);
      a.tensor.shape = *shape;
      if (sj) {
        if (auto s = int_list(*sj); s && s->size() == shape->size()) a.tensor.strides = *s;
      }
      a.kind = shape->empty() && is_wrapped_number_dtype(type) ? ArgumentKind::kNumber
                                                               : ArgumentKind::kTensor;
    }
    out.arguments.push_back(std::move(a));
  }
  return out;
}

std::optional<std::vector<std::vector<int64_t>>> parse_shape_filter(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_array()) return std::nullopt;
  std::vector<std::vector<int64_t>> out;
  for (const auto& s : j) {
    auto l = int_list(s);
    if (!l) return std::nullopt;
    out.push_back(*l);
  }
  return out;
}

bool shapes_match(const std::vector<OpArgument>& arguments,
                  const std::vector<std::vector<int64_t>>& filter) {
  size_t k = 0;
  for (const auto& a : arguments) {
    if (k == filter.size()) break;
    if (a.kind == ArgumentKind::kTensor) {
      if (a.tensor.shape != filter[k]) return false;
      ++k;
    } else if (a.kind == ArgumentKind::kTensorList) {
      if (a.tensors.empty() || a.tensors.front().shape != filter[k]) return false;
      ++k;
    }
  }
  return k == filter.size();
}

std::string describe_arguments(const std::vector<OpArgument>& arguments) {
  std::vector<std::string> parts;
  for (const auto& a : arguments) {
    switch (a.kind) {
      case ArgumentKind::kTensor:
        parts.push_back(describe(a.tensor));
        break;
      case ArgumentKind::kNumber:
        parts.push_back(fmt::format("<{} number>", a.tensor.kineto_dtype));
        break;
      case ArgumentKind::kScalar:
        parts.push_back(a.scalar.text);
        break;
      case ArgumentKind::kScalarList: {
        std::vector<std::string> v;
        for (const auto& s : a.list) v.push_back(s.text);
        parts.push_back(fmt::format("[{}]", fmt::join(v, ", ")));
        break;
      }
      case ArgumentKind::kTensorList: {
        std::vector<std::string> v;
        for (const auto& t : a.tensors) v.push_back(describe(t));
        parts.push_back(fmt::format("({})", fmt::join(v, ", ")));
        break;
      }
      case ArgumentKind::kNone:
        parts.push_back("None");
        break;
    }
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace magpie::replay
