#include "core/gzip_stream.hpp"

#include <isa-l/igzip_lib.h>

#include <algorithm>
#include <cstring>

#include "core/gzip.hpp"

namespace magpie {

namespace {
// Output handed to readers per step: small enough that parsing starts early,
// large enough that the wake-ups cost nothing.
constexpr size_t kStepBytes = size_t{2} << 20;

uint32_t trailer_size(const PaddedBuffer& gz) {
  uint32_t isize = 0;
  if (gz.size() >= 18) std::memcpy(&isize, gz.data() + gz.size() - 4, 4);
  return isize;
}
}  // namespace

InflatingBuffer::InflatingBuffer(PaddedBuffer compressed, std::string origin)
    : compressed_(std::move(compressed)), origin_(std::move(origin)), out_(trailer_size(compressed_)) {
  thread_ = std::thread([this] { run(); });
}

InflatingBuffer::~InflatingBuffer() {
  if (thread_.joinable()) thread_.join();
}

void InflatingBuffer::run() {
  inflate_state st;
  isal_inflate_init(&st);
  st.crc_flag = ISAL_GZIP;  // parse the gzip header and check CRC32 and ISIZE
  st.next_in = reinterpret_cast<uint8_t*>(compressed_.data());
  st.avail_in = static_cast<uint32_t>(std::min<size_t>(compressed_.size(), UINT32_MAX));
  const size_t cap = out_.size();
  size_t done = 0;
  bool clean = compressed_.size() >= 18 && compressed_.size() <= UINT32_MAX;
  while (clean && st.block_state != ISAL_BLOCK_FINISH) {
    size_t step = std::min(kStepBytes, cap - done);
    st.next_out = reinterpret_cast<uint8_t*>(out_.data() + done);
    st.avail_out = static_cast<uint32_t>(step);
    int rc = isal_inflate(&st);
    size_t got = step - st.avail_out;
    done += got;
    if (got > 0) {
      std::lock_guard lock(mutex_);
      produced_.store(done, std::memory_order_release);
      progress_.notify_all();
    }
    // An error, input used up before the end (truncated), or more output than
    // the trailer promised: leave the diagnosis to the one-shot path.
    if (rc != ISAL_DECOMP_OK || (got == 0 && st.block_state != ISAL_BLOCK_FINISH)) clean = false;
  }
  // Trailing bytes mean a second gzip member; a short output means the trailer lied.
  clean_ = clean && st.avail_in == 0 && done == cap;
  std::lock_guard lock(mutex_);
  stopped_.store(true, std::memory_order_release);
  progress_.notify_all();
}

size_t InflatingBuffer::wait_for(size_t n) {
  size_t have = produced_.load(std::memory_order_acquire);
  if (have >= n || stopped()) return have;
  std::unique_lock lock(mutex_);
  progress_.wait(lock, [&] { return produced_.load(std::memory_order_acquire) >= n || stopped(); });
  return produced_.load(std::memory_order_acquire);
}

InflatingBuffer::Result InflatingBuffer::finish() {
  if (thread_.joinable()) thread_.join();
  if (clean_) return {std::move(out_), true};
  // out_ stays until destruction: readers may still hold views into it.
  return {gunzip(compressed_.view(), origin_), false};
}

}  // namespace magpie
