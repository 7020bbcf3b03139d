#include "core/error.hpp"
#include "mcp/detail/tool_set.hpp"
#include "mcp/schema_build.hpp"
#include "serve/docker_command.hpp"
#include "serve/engine_command.hpp"

namespace magpie::mcp::detail {

using nlohmann::json;
namespace s = schema;

// ---- list_benchmark_images ----

Tool list_benchmark_images_tool() {
  Tool t;
  t.name = "list_benchmark_images";
  t.title = "Serving benchmark images";
  t.description =
      "The docker images `benchmark` uses per framework and GPU vendor when docker_image is not "
      "given (run_mode docker).";
  t.input_schema =
      s::input({{"framework", s::one_of("Only this framework", {"vllm", "sglang", "atom"})}});
  json entry = s::object({{"framework", s::string("")},
                          {"vendor", s::one_of("", {"nvidia", "amd"})},
                          {"gpu_archs", s::array(s::string(""), "archs this image is chosen for")},
                          {"image", s::string("")}},
                         {"framework", "vendor", "image"});
  t.output_schema =
      s::object({{"images", s::array(entry, "")}, {"note", s::string("")}}, {"images"});
  t.handler = [](const ToolCall& call) {
    std::string only = arg<std::string>(call, "framework", "");
    struct VendorArchs {
      const char* vendor;
      std::vector<std::string> archs;
    };
    const std::vector<VendorArchs> vendors = {{"nvidia", {"sm_80", "sm_90", "sm_100"}},
                                              {"amd", {"gfx942", "gfx950"}}};
    json images = json::array();
    for (auto f : {serve::Framework::kVllm, serve::Framework::kSglang, serve::Framework::kAtom}) {
      if (!only.empty() && only != serve::to_string(f)) continue;
      for (const auto& v : vendors) {
        try {
          images.push_back({{"framework", serve::to_string(f)},
                            {"vendor", v.vendor},
                            {"gpu_archs", v.archs},
                            {"image", serve::default_image(f, v.archs.front())}});
        } catch (const Error&) {
          // No image for this pair (ATOM on NVIDIA).
        }
      }
    }
    json out = {{"images", std::move(images)},
                {"note", "docker_image overrides the choice; gpu_arch picks the vendor"}};
    return ToolOutput{out, {}};
  };
  return t;
}

}  // namespace magpie::mcp::detail
