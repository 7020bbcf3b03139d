#include "sources/source_index.hpp"

#include <algorithm>
#include <atomic>
#include <functional>
#include <system_error>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/parallel.hpp"
#include "sources/detail/repo_files.hpp"
#include "sources/detail/source_index_impl.hpp"

namespace magpie::sources {
namespace {

// What one worker thread found; merged once all threads are done.
struct WorkerResult {
  std::vector<std::pair<uint32_t, detail::Site>> sites;  // (file, site)
  std::vector<std::pair<uint32_t, uint64_t>> hashes;     // (file, hash of its bytes)
  size_t files_scanned = 0;
  size_t bytes_scanned = 0;
  size_t files_skipped = 0;
};

void scan_files(const std::vector<detail::SourceFile>& files, std::atomic<size_t>& next,
                WorkerResult& result) {
  const detail::DefinitionScanner& scanner = detail::definition_scanner();
  detail::DefinitionScanner::Scratch scratch(scanner);
  std::vector<detail::Site> sites;
  for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < files.size();) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(files[i].absolute, ec);
    if (ec || size > SourceIndex::kMaxFileBytes) {
      ++result.files_skipped;
      continue;
    }
    PaddedBuffer buffer;
    try {
      buffer = read_file(files[i].absolute);
    } catch (const Error&) {  // vanished or unreadable since listing: not fatal for a search
      ++result.files_skipped;
      continue;
    }
    sites.clear();
    scanner.scan(buffer.view(), files[i].language, scratch, sites);
    // Inductor's compiled module embeds every kernel's source as a string
    // next to the kernel's own file in the cache (TORCHINDUCTOR_CACHE_DIR).
    if (files[i].language == detail::SourceLanguage::kPython &&
        buffer.view().find("async_compile.triton(") != std::string_view::npos) {
      for (detail::Site& s : sites) {
        if (s.kind == detail::SiteKind::kTritonJit) s.kind = detail::SiteKind::kTritonInOutputCode;
      }
    }
    if (!sites.empty()) {
      result.hashes.emplace_back(static_cast<uint32_t>(i),
                                 std::hash<std::string_view>{}(buffer.view()));
    }
    for (detail::Site& s : sites) result.sites.emplace_back(static_cast<uint32_t>(i), std::move(s));
    ++result.files_scanned;
    result.bytes_scanned += buffer.size();
  }
}

}  // namespace

SourceIndex SourceIndex::build(const std::vector<std::filesystem::path>& repos, unsigned threads) {
  auto impl = std::make_shared<Impl>();
  for (const auto& repo : repos) {
    std::string root = detail::normalize_repo_root(repo);
    // The same repository twice would make every kernel in it ambiguous.
    if (std::find(impl->repos.begin(), impl->repos.end(), root) == impl->repos.end()) {
      impl->repos.push_back(std::move(root));
    }
  }
  const std::vector<detail::SourceFile> files = detail::list_source_files(impl->repos);
  impl->files.reserve(files.size());
  for (const auto& f : files) impl->files.emplace_back(f.repo, f.relative);

  unsigned workers = threads == 0 ? default_thread_count() : threads;
  workers =
      static_cast<unsigned>(std::clamp<size_t>(workers, 1, std::max<size_t>(files.size(), 1)));
  std::vector<WorkerResult> results(workers);
  std::atomic<size_t> next{0};
  parallel_for(workers, workers, [&](size_t w) { scan_files(files, next, results[w]); });

  impl->file_hash.assign(files.size(), 0);
  for (WorkerResult& r : results) {
    for (auto [file, hash] : r.hashes) impl->file_hash[file] = hash;
    impl->files_scanned += r.files_scanned;
    impl->bytes_scanned += r.bytes_scanned;
    impl->files_skipped += r.files_skipped;
    for (auto& [file, site] : r.sites) {
      if (detail::is_definition(site.kind)) ++impl->definitions;
      impl->by_name[std::move(site.name)].push_back({file, site.line, site.kind});
    }
    r.sites = {};
  }

  std::vector<std::string_view> names;
  for (const auto& [name, sites] : impl->by_name) {
    if (std::any_of(sites.begin(), sites.end(),
                    [](const Impl::Site& s) { return detail::is_definition(s.kind); })) {
      names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  for (std::string_view name : names) {
    impl->name_starts.push_back(static_cast<uint32_t>(impl->definition_names.size()));
    impl->definition_names.append(name);
    impl->definition_names.push_back('\n');
  }
  return SourceIndex(std::move(impl));
}

const std::vector<std::string>& SourceIndex::repos() const { return impl_->repos; }

std::vector<SourceLocation> SourceIndex::python_test_files() const {
  std::vector<SourceLocation> out;
  for (const auto& [repo, file] : impl_->files) {
    if (!file.ends_with(".py")) continue;
    const size_t slash = file.rfind('/');
    const std::string_view name =
        std::string_view(file).substr(slash == std::string::npos ? 0 : slash + 1);
    if (!name.starts_with("test_") && !name.ends_with("_test.py")) continue;
    const std::string dirs = "/" + file.substr(0, slash == std::string::npos ? 0 : slash + 1);
    if (dirs.find("/tests/") == std::string::npos && dirs.find("/test/") == std::string::npos &&
        dirs.find("/op_tests/") == std::string::npos)
      continue;
    out.push_back({impl_->repos[repo], file, 0, "test"});
  }
  return out;
}

size_t SourceIndex::files_scanned() const { return impl_->files_scanned; }
size_t SourceIndex::bytes_scanned() const { return impl_->bytes_scanned; }
size_t SourceIndex::definitions() const { return impl_->definitions; }
size_t SourceIndex::files_skipped() const { return impl_->files_skipped; }

}  // namespace magpie::sources
