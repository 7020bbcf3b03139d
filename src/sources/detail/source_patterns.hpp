#pragma once
// One Hyperscan database of kernel definition, launch and registration
// patterns, and the per-file scan that turns its matches into named sites.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sources/detail/repo_files.hpp"

struct hs_database;
struct hs_scratch;

namespace magpie::sources::detail {

enum class SiteKind : uint8_t {
  kGlobal,     // CUDA/HIP __global__ function definition
  kTritonJit,  // def under @triton.jit / autotune / heuristics
  // The same inside an Inductor output-code module (a file that calls
  // async_compile.triton('name', '''source''')): a copy of the kernel whose
  // own file is in the cache, and the module that launches it.
  kTritonInOutputCode,
  kPythonDef,     // any other Python def
  kTemplate,      // template <...> struct/class NAME (CK/CUTLASS kernel types)
  kLaunch,        // NAME<<<...>>> or hipLaunchKernelGGL(NAME, ...)
  kRegistration,  // m.def("NAME"...), ops.impl("NAME"...), REGISTER_DISPATCH(..., &NAME)
};
// "__global__", "triton.jit", "triton.jit (output code)", "def", "template", "launch_registration".
std::string_view to_string(SiteKind kind);
bool is_definition(SiteKind kind);

struct Site {
  std::string name;
  uint32_t line = 0;  // 1-based, of the identifier
  SiteKind kind = SiteKind::kGlobal;
};

class DefinitionScanner {
 public:
  // Per-thread scan space; Hyperscan scratch must not be shared between threads.
  class Scratch {
   public:
    explicit Scratch(const DefinitionScanner& scanner);
    ~Scratch();
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;

   private:
    friend class DefinitionScanner;
    hs_scratch* scratch_ = nullptr;
    std::vector<std::pair<unsigned, uint64_t>> matches_;  // (pattern id, end offset)
  };

  // Compiles the database; throws Error(kInternal) if Hyperscan rejects it.
  DefinitionScanner();
  ~DefinitionScanner();
  DefinitionScanner(const DefinitionScanner&) = delete;
  DefinitionScanner& operator=(const DefinitionScanner&) = delete;

  // One block scan of `text`; appends the sites found, in file order.
  void scan(std::string_view text, SourceLanguage language, Scratch& scratch,
            std::vector<Site>& out) const;

 private:
  hs_database* db_ = nullptr;
};

// The process-wide scanner, compiled on first use.
const DefinitionScanner& definition_scanner();

}  // namespace magpie::sources::detail
