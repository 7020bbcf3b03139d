#include "trace/op_args.hpp"

#include <unordered_map>

#include "trace/event_table.hpp"
#include "trace/op_args_cursor.hpp"

namespace magpie::trace {

std::optional<OpDims> parse_input_dims(std::string_view text) {
  detail::ArgCursor c(text);
  OpDims out;
  if (!c.eat('[')) return std::nullopt;
  if (!c.eat(']')) {
    do {
      if (c.eat_word("null")) {
        out.emplace_back();
        continue;
      }
      if (!c.eat('[')) return std::nullopt;
      c.skip_ws();
      if (c.peek() == '[') {  // TensorList: keep the slot, drop the shapes
        do {
          if (!c.skip_list(8)) return std::nullopt;
        } while (c.eat(','));
        if (!c.eat(']')) return std::nullopt;
        out.emplace_back();
        continue;
      }
      auto shape = c.int_list_rest();
      if (!shape) return std::nullopt;
      out.push_back(std::move(*shape));
    } while (c.eat(','));
    if (!c.eat(']')) return std::nullopt;
  }
  c.skip_ws();
  if (!c.at_end()) return std::nullopt;
  return out;
}

std::vector<std::string> parse_input_types(std::string_view text) {
  detail::ArgCursor c(text);
  std::vector<std::string> out;
  if (!c.eat('[')) return {};
  if (c.eat(']')) return out;
  do {
    if (c.eat_word("null")) {
      out.emplace_back();
      continue;
    }
    auto s = c.string();
    if (!s) return {};
    out.push_back(std::move(*s));
  } while (c.eat(','));
  if (!c.eat(']')) return {};
  c.skip_ws();
  if (!c.at_end()) return {};
  return out;
}

void index_op_arguments(EventTable& t, const StringPool& strings) {
  if (t.op_details.empty()) return;
  std::unordered_map<OpDetailKey, uint32_t, OpDetailKeyHash> kept_index;
  std::vector<OpDetail> kept;
  std::vector<uint32_t> moved_to(t.op_details.size());
  for (size_t i = 0; i < t.op_details.size(); ++i) {
    const OpDetail& o = t.op_details[i];
    auto [it, fresh] = kept_index.emplace(OpDetailKey{o.input_dims, o.input_type, o.concrete_inputs, o.input_strides},
                                          static_cast<uint32_t>(kept.size()));
    if (fresh) kept.push_back(o);
    moved_to[i] = it->second;
  }
  for (size_t r = 0; r < t.detail.size(); ++r) {
    if (t.detail[r] == kNoDetail || is_gpu_activity(t.category[r]) || is_launch_api(t.category[r])) continue;
    t.detail[r] = moved_to[t.detail[r]];
  }
  for (OpDetail& o : kept) {
    o.args.dims = parse_input_dims(strings.view(o.input_dims));
    o.args.types = parse_input_types(strings.view(o.input_type));
    o.args.concrete = parse_input_types(strings.view(o.concrete_inputs));
  }
  t.op_details = std::move(kept);
}

}  // namespace magpie::trace
