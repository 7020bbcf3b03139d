#pragma once
// Reading whole files into padded buffers and writing reports atomically.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace magpie {

// A byte buffer with zeroed slack after the data (simdjson needs 64 bytes of
// readable padding). Allocated uninitialised: large traces are filled once.
class PaddedBuffer {
 public:
  static constexpr size_t kPadding = 64;
  PaddedBuffer() = default;
  explicit PaddedBuffer(size_t size);
  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  void shrink(size_t new_size);  // keeps capacity; re-zeroes the padding
  std::string_view view() const { return {data_.get(), size_}; }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
};

// Reads a file; throws Error(kNotFound/kUnreadable) naming the path.
PaddedBuffer read_file(const std::filesystem::path& path);

// Reads a file and inflates it when it is gzip (by magic bytes, not extension).
PaddedBuffer read_maybe_gzip(const std::filesystem::path& path);

// Writes to "<path>.tmp.<pid>" then renames, so readers never see half a report.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

}  // namespace magpie
