#include "kernel/kernel_discovery.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <system_error>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "kernel/kernel_source_scan.hpp"

namespace magpie::kernel {

namespace fs = std::filesystem;

std::string_view to_string(KernelLanguage language) {
  switch (language) {
    case KernelLanguage::kCuda:
      return "cuda";
    case KernelLanguage::kHip:
      return "hip";
    case KernelLanguage::kTriton:
      return "triton";
    case KernelLanguage::kPyTorch:
      return "pytorch";
  }
  return "cuda";
}

KernelType to_kernel_type(KernelLanguage language) {
  switch (language) {
    case KernelLanguage::kCuda:
      return KernelType::kCuda;
    case KernelLanguage::kHip:
      return KernelType::kHip;
    case KernelLanguage::kTriton:
      return KernelType::kTriton;
    case KernelLanguage::kPyTorch:
      return KernelType::kPytorch;
  }
  return KernelType::kCuda;
}

namespace {

constexpr uintmax_t kMaxFileBytes = 16u << 20;  // larger "sources" are generated or data

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Which languages the request wants; nullopt = all.
std::optional<KernelLanguage> parse_filter(const std::string& text) {
  const std::string t = lower(text);
  if (t == "all" || t.empty()) return std::nullopt;
  if (t == "cuda") return KernelLanguage::kCuda;
  if (t == "hip") return KernelLanguage::kHip;
  if (t == "triton") return KernelLanguage::kTriton;
  if (t == "pytorch" || t == "torch" || t == "py") return KernelLanguage::kPyTorch;
  throw Error(ErrorKind::kUsage, fmt::format("unknown kernel_type '{}'", text), {}, std::nullopt,
              "use one of hip, cuda, triton, pytorch, all");
}

enum class FileKind { kCudaSource, kHipSource, kCFamily, kPython, kOther };

FileKind file_kind(const fs::path& p) {
  const std::string ext = lower(p.extension().string());
  if (ext == ".cu" || ext == ".cuh") return FileKind::kCudaSource;
  if (ext == ".hip") return FileKind::kHipSource;
  static const std::set<std::string> kCFamily{".cpp", ".cc", ".cxx", ".c++", ".h",
                                              ".hpp", ".hh", ".hxx", ".inl"};
  if (kCFamily.contains(ext)) return FileKind::kCFamily;
  if (ext == ".py") return FileKind::kPython;
  return FileKind::kOther;
}

// Folders that hold no project sources: VCS data, build trees, environments, caches.
bool is_skipped_dir(const fs::path& dir) {
  static const std::set<std::string> kNames{
      ".git",    ".hg",           ".svn",          "node_modules", "__pycache__", ".venv",
      "venv",    ".tox",          ".nox",          ".eggs",        ".mypy_cache", ".pytest_cache",
      ".cache",  "site-packages", "dist-packages", "build",        "_build",      "dist",
      ".ccache", ".idea",         ".vscode"};
  const std::string name = dir.filename().string();
  const std::string lname = lower(name);
  if (kNames.contains(lname)) return true;
  if (lname.starts_with("build-") || lname.starts_with("build_") ||
      lname.starts_with("cmake-build-"))
    return true;
  if (lname.ends_with(".egg-info")) return true;
  std::error_code ec;
  // A build tree or a virtual environment under any name.
  return fs::exists(dir / "CMakeCache.txt", ec) || fs::exists(dir / "pyvenv.cfg", ec);
}

bool is_test_dir(const fs::path& dir) {
  const std::string n = lower(dir.filename().string());
  return n == "test" || n == "tests";
}

bool is_examples_dir(const fs::path& dir) {
  const std::string n = lower(dir.filename().string());
  return n == "examples" || n == "example";
}

bool is_test_file(const fs::path& file) {
  const std::string name = lower(file.filename().string());
  const std::string stem = lower(file.stem().string());
  return (name.starts_with("test_") && name.ends_with(".py")) || stem.ends_with("_test");
}

bool wanted(const std::optional<KernelLanguage>& filter, KernelLanguage l) {
  return !filter || *filter == l;
}

// A C-family file with kernels but neither HIP nor CUDA markers; its language is
// decided once the whole project has been seen.
struct UndecidedFile {
  fs::path file;
  std::vector<ScannedKernel> kernels;
};

class Walker {
 public:
  Walker(const DiscoveryRequest& req, std::optional<KernelLanguage> filter)
      : req_(req), filter_(filter) {}

  void scan_file(const fs::path& file) {
    const FileKind kind = file_kind(file);
    if (kind == FileKind::kOther) return;
    const bool want_c =
        wanted(filter_, KernelLanguage::kCuda) || wanted(filter_, KernelLanguage::kHip);
    const bool want_py =
        wanted(filter_, KernelLanguage::kTriton) || wanted(filter_, KernelLanguage::kPyTorch);
    if (kind == FileKind::kPython ? !want_py : !want_c) return;
    std::error_code ec;
    const auto size = fs::file_size(file, ec);
    if (!ec && size > kMaxFileBytes) {
      result_.warnings.push_back(fmt::format(
          "{}: skipped, {} MiB is larger than a hand-written source", file.string(), size >> 20));
      return;
    }
    PaddedBuffer text;
    try {
      text = read_file(file);
    } catch (const Error& e) {
      result_.warnings.push_back(fmt::format("{}: not read: {}", file.string(), e.message()));
      return;
    }
    ++result_.files_scanned;
    if (kind == FileKind::kPython) {
      auto scan = scan_python_source(text.view());
      add(KernelLanguage::kTriton, file, scan.triton);
      add(KernelLanguage::kPyTorch, file, scan.modules);
      return;
    }
    auto scan = scan_c_source(text.view());
    // HIP markers make a C++ file HIP even beside CUDA ones (portable code), and
    // a .cu HIP when it has no CUDA markers at all (a hipified source).
    const bool hip = kind == FileKind::kHipSource ||
                     (scan.hip_markers && (kind == FileKind::kCFamily || !scan.cuda_markers));
    if (hip) {
      project_hip_ = true;
      add(KernelLanguage::kHip, file, scan.kernels);
    } else if (kind == FileKind::kCudaSource || scan.cuda_markers) {
      project_cuda_ = true;
      add(KernelLanguage::kCuda, file, scan.kernels);
    } else if (!scan.kernels.empty()) {
      undecided_.push_back({file, std::move(scan.kernels)});
    }
  }

  void walk(const fs::path& root) {
    std::error_code ec;
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec),
        end;
    if (ec) {
      result_.warnings.push_back(fmt::format("{}: cannot list: {}", root.string(), ec.message()));
      return;
    }
    for (; it != end; it.increment(ec)) {
      if (ec) {
        result_.warnings.push_back(
            fmt::format("{}: listing stopped: {}", root.string(), ec.message()));
        break;
      }
      const fs::path& p = it->path();
      std::error_code type_ec;
      if (it->is_directory(type_ec)) {
        if (is_skipped_dir(p) || (!req_.include_tests && is_test_dir(p)) ||
            (!req_.include_examples && is_examples_dir(p))) {
          it.disable_recursion_pending();
        }
        continue;
      }
      if (!it->is_regular_file(type_ec)) continue;
      if (!req_.include_tests && is_test_file(p)) continue;
      scan_file(p);
    }
  }

  DiscoveryResult finish() {
    // Headers and .cpp files that say neither: HIP when the project shows HIP and
    // no CUDA, else CUDA (the usual home of a bare `__global__`).
    if (!undecided_.empty()) {
      const KernelLanguage lang =
          project_hip_ && !project_cuda_ ? KernelLanguage::kHip : KernelLanguage::kCuda;
      size_t kernels = 0;
      for (const auto& u : undecided_) {
        kernels += u.kernels.size();
        add(lang, u.file, u.kernels);
      }
      if (wanted(filter_, lang)) {
        result_.warnings.push_back(fmt::format(
            "{} kernel(s) in {} file(s) that include neither HIP nor CUDA headers (first: {}) were "
            "taken as {}: {}",
            kernels, undecided_.size(), undecided_.front().file.string(), to_string(lang),
            lang == KernelLanguage::kHip ? "the project has HIP sources and no CUDA ones"
                                         : "the project has CUDA sources or no HIP ones"));
      }
    }
    std::sort(result_.kernels.begin(), result_.kernels.end(), [](const auto& a, const auto& b) {
      return a.file != b.file ? a.file < b.file : a.line < b.line;
    });
    return std::move(result_);
  }

 private:
  void add(KernelLanguage lang, const fs::path& file, const std::vector<ScannedKernel>& found) {
    if (!wanted(filter_, lang)) return;
    for (const auto& k : found) result_.kernels.push_back({lang, file, k.line, k.name});
  }

  const DiscoveryRequest& req_;
  std::optional<KernelLanguage> filter_;
  DiscoveryResult result_;
  std::vector<UndecidedFile> undecided_;
  bool project_hip_ = false;
  bool project_cuda_ = false;
};

}  // namespace

DiscoveryResult discover_kernels(const DiscoveryRequest& request) {
  if (request.project_path.empty()) {
    throw Error(ErrorKind::kUsage, "project_path is empty", {}, std::nullopt,
                "pass the folder (or file) to search for kernels");
  }
  const auto filter = parse_filter(request.kernel_type);
  std::error_code ec;
  const fs::path root = fs::absolute(request.project_path, ec).lexically_normal();
  const auto status = fs::status(root, ec);
  if (!fs::exists(status)) {
    throw Error(ErrorKind::kNotFound, "project path does not exist", root.string(), std::nullopt,
                "pass an existing folder (or source file) of the project");
  }
  Walker walker(request, filter);
  if (fs::is_directory(status)) {
    walker.walk(root);
  } else {
    walker.scan_file(root);  // one file, named explicitly: no folder or test filters
  }
  return walker.finish();
}

}  // namespace magpie::kernel
