#include "core/arriving_text.hpp"

#include <fcntl.h>
#include <isa-l/igzip_lib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.hpp"
#include "core/gzip.hpp"

namespace magpie {

namespace {
// Output handed to readers per step: small enough that parsing starts early,
// large enough that the wake-ups cost nothing.
constexpr size_t kStepBytes = size_t{2} << 20;
// Pages are recycled in aligned units of this size, so that a unit is always
// one whole mapping (moved in one piece, or never moved) when it moves again.
constexpr uintptr_t kRecycleUnit = uintptr_t{2} << 20;

uintptr_t round_up(uintptr_t v, uintptr_t to) { return (v + to - 1) / to * to; }
uintptr_t round_down(uintptr_t v, uintptr_t to) { return v / to * to; }

uint32_t trailer_size(const PaddedBuffer& gz) {
  uint32_t isize = 0;
  if (gz.size() >= 18) std::memcpy(&isize, gz.data() + gz.size() - 4, 4);
  return isize;
}
}  // namespace

std::unique_ptr<ArrivingText> ArrivingText::inflate(PaddedBuffer compressed, std::string origin) {
  std::unique_ptr<ArrivingText> t(new ArrivingText);
  // An implausible trailer sizes nothing: the inflate then runs out of room and
  // the reader falls back to the one-shot path, which grows as it goes.
  t->out_ = PaddedBuffer(plausible_gzip_size(compressed.size(), trailer_size(compressed)));
  t->data_ = t->out_.data();
  t->size_ = t->out_.size();
  t->compressed_ = std::move(compressed);
  t->gz_filled_ = t->compressed_.size();
  t->file_bytes_ = t->compressed_.size();
  t->inflating_ = true;
  t->origin_ = std::move(origin);
  t->start(&ArrivingText::inflate_all);
  return t;
}

std::unique_ptr<ArrivingText> ArrivingText::open(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st{};
  char magic[2] = {0, 0};
  if (fd < 0 || ::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode) || !S_ISREG(st.st_mode) ||
      ::pread(fd, magic, 2, 0) != 2 || !is_gzip(std::string_view(magic, 2))) {
    if (fd >= 0) ::close(fd);
    return read(path);  // not gzip (or not a plain file): read as it is, with read()'s errors
  }
  const auto size = static_cast<size_t>(st.st_size);
  uint32_t isize = 0;
  if (size < 18 || ::pread(fd, &isize, 4, static_cast<off_t>(size - 4)) != 4) isize = 0;
  std::unique_ptr<ArrivingText> t(new ArrivingText);
  t->out_ = PaddedBuffer(plausible_gzip_size(size, isize));
  t->data_ = t->out_.data();
  t->size_ = t->out_.size();
  t->compressed_ = PaddedBuffer(size);  // filled by the producer as it inflates
  t->gz_fd_ = fd;
  t->file_bytes_ = size;
  t->inflating_ = true;
  t->origin_ = path.string();
  t->start(&ArrivingText::inflate_all);
  return t;
}

std::unique_ptr<ArrivingText> ArrivingText::read(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st{};
  if (fd < 0 || ::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    if (fd >= 0) ::close(fd);
    (void)read_file(path);  // throws the one-shot path's error for this file
    throw Error(ErrorKind::kUnreadable, "cannot open", path.string());
  }
  std::unique_ptr<ArrivingText> t(new ArrivingText);
  t->out_ = PaddedBuffer(static_cast<size_t>(st.st_size));
  t->data_ = t->out_.data();
  t->size_ = t->out_.size();
  t->fd_ = fd;
  t->origin_ = path.string();
  t->start(&ArrivingText::read_all);
  return t;
}

void ArrivingText::start(void (ArrivingText::*producer)()) {
  thread_ = std::thread([this, producer] {
    (this->*producer)();
    std::lock_guard lock(mutex_);
    stopped_.store(true, std::memory_order_release);
    progress_.notify_all();
  });
}

ArrivingText::~ArrivingText() {
  // Nobody reads on (a reader's error or cancel): the producer stops at its next step.
  abandoned_.store(true, std::memory_order_release);
  lift_window();  // a producer waiting for room would never be joined
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) ::close(fd_);
  if (gz_fd_ >= 0) ::close(gz_fd_);
}

void ArrivingText::back_ahead(size_t done, size_t step) {
  const auto base = reinterpret_cast<uintptr_t>(data_);
  // Units nobody has touched yet: past the unit being written now, inside the
  // buffer. Every recycled unit is placed at once, however far ahead, so the
  // steps to come find their pages there.
  (void)step;
  const uintptr_t want_to = round_down(base + size_, kRecycleUnit);
  std::vector<std::pair<uintptr_t, uintptr_t>> moves;  // from → to
  {
    std::lock_guard lock(mutex_);
    if (!recycling_) return;
    uintptr_t at = std::max(backed_to_, round_up(base + done, kRecycleUnit));
    while (at < want_to && !recycled_.empty()) {
      moves.emplace_back(recycled_.back(), at);
      recycled_.pop_back();
      at += kRecycleUnit;
    }
    backed_to_ = std::max(backed_to_, at);
    window_stats_.units_recycled += moves.size();
  }
  for (auto [from, to] : moves) {
    // Moves the unit's pages (page tables, no copy, no zeroing); `from` stays
    // mapped and reads as zero, as a dropped page would.
    void* r = ::mremap(reinterpret_cast<void*>(from), kRecycleUnit, kRecycleUnit,
                       MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, reinterpret_cast<void*>(to));
    if (r == MAP_FAILED) {
      ::madvise(reinterpret_cast<void*>(from), kRecycleUnit, MADV_DONTNEED);
      std::lock_guard lock(mutex_);
      recycling_ = false;
      window_stats_.recycling_failed = true;
      --window_stats_.units_recycled;
    }
  }
}

ArrivingText::WindowStats ArrivingText::window_stats() {
  std::lock_guard lock(mutex_);
  return window_stats_;
}

void ArrivingText::drop_recycled() {
  std::vector<uintptr_t> units;
  {
    std::lock_guard lock(mutex_);
    recycling_ = false;
    units.swap(recycled_);
  }
  for (uintptr_t u : units) ::madvise(reinterpret_cast<void*>(u), kRecycleUnit, MADV_DONTNEED);
}

void ArrivingText::publish(size_t bytes) {
  std::lock_guard lock(mutex_);
  produced_.store(bytes, std::memory_order_release);
  // Only steps that began under the window count: what the producer made
  // before set_window was not bounded by it.
  if (step_windowed_)
    window_stats_.max_lead = std::max(window_stats_.max_lead, bytes - std::min(bytes, release_offset_));
  progress_.notify_all();
}

void ArrivingText::set_window(size_t bytes, size_t keep_prefix) {
  std::lock_guard lock(mutex_);
  window_ = bytes;
  keep_prefix_ = std::max(keep_prefix_, keep_prefix);
  windowed_ = windowed_ || bytes > 0;
  room_.notify_all();
}

void ArrivingText::lift_window() {
  std::lock_guard lock(mutex_);
  window_ = 0;
  room_.notify_all();
}

void ArrivingText::wait_for_room(size_t done) {
  std::unique_lock lock(mutex_);
  // Every change to these three happens under mutex_ and is followed by a
  // notify of room_, so the producer cannot sleep through one.
  room_.wait(lock, [&] { return window_ == 0 || done < release_offset_ + window_ || done < wanted_; });
  step_windowed_ = window_ > 0;
}

void ArrivingText::release(size_t offset) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const auto base = reinterpret_cast<uintptr_t>(data_);
  uintptr_t from = 0, to = 0;  // dropped page-wise
  std::vector<uintptr_t> units;
  {
    std::lock_guard lock(mutex_);
    offset = std::min(offset, produced_.load(std::memory_order_acquire));
    // Without the source a dropped page could never be read again: keep all.
    if (offset <= release_offset_ || source_dropped_) return;
    release_offset_ = offset;
    const uintptr_t floor = round_up(base + keep_prefix_, page);
    from = std::max(floor, dropped_end_);
    to = round_down(base + offset, page);
    if (recycling_ && !stopped()) {
      // Whole units wait for the producer to reuse their pages; the stretch
      // before the first unit boundary is dropped; the part of a unit not yet
      // released all stays until it is.
      const uintptr_t first_unit = round_up(floor, kRecycleUnit);
      uintptr_t u = std::max(first_unit, dropped_end_);
      for (; u + kRecycleUnit <= to; u += kRecycleUnit) units.push_back(u);
      recycled_.insert(recycled_.end(), units.begin(), units.end());
      to = std::min(to, first_unit);
      dropped_end_ = std::max({dropped_end_, to, units.empty() ? uintptr_t{0} : units.back() + kRecycleUnit});
    } else if (to > from) {
      dropped_end_ = to;
    }
    room_.notify_all();
  }
  if (to > from) ::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
  if (to > from || !units.empty()) released_any_.store(true, std::memory_order_release);
}

void ArrivingText::inflate_all() {
  inflate_state st;
  isal_inflate_init(&st);
  st.crc_flag = ISAL_GZIP;  // parse the gzip header and check CRC32 and ISIZE
  st.next_in = reinterpret_cast<uint8_t*>(compressed_.data());
  st.avail_in = static_cast<uint32_t>(std::min<size_t>(gz_filled_, UINT32_MAX));
  const size_t cap = out_.size();
  const size_t gz_size = compressed_.size();
  size_t done = 0;
  bool clean = gz_size >= 18 && gz_size <= UINT32_MAX;
  bool read_short = false;
  while (clean && st.block_state != ISAL_BLOCK_FINISH) {
    // open(): keep more compressed bytes in than a step of output can use
    // (text compresses about 10x), reading the file as the inflate goes.
    while (gz_fd_ >= 0 && !read_short && gz_filled_ < gz_size && st.avail_in < kStepBytes / 2) {
      ssize_t n = ::read(gz_fd_, compressed_.data() + gz_filled_, std::min(kStepBytes, gz_size - gz_filled_));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        read_short = true;  // an error, or the file shrank: the one-shot path says which
        break;
      }
      gz_filled_ += static_cast<size_t>(n);
      st.avail_in += static_cast<uint32_t>(n);
    }
    wait_for_room(done);
    if (abandoned_.load(std::memory_order_acquire)) {
      clean = false;
      break;
    }
    size_t step = std::min(kStepBytes, cap - done);
    back_ahead(done, step);
    st.next_out = reinterpret_cast<uint8_t*>(out_.data() + done);
    st.avail_out = static_cast<uint32_t>(step);
    int rc = isal_inflate(&st);
    size_t got = step - st.avail_out;
    done += got;
    if (got > 0) publish(done);
    // An error, input used up before the end (truncated), or more output than
    // the trailer promised: leave the diagnosis to the one-shot path.
    if (rc != ISAL_DECOMP_OK || (got == 0 && st.block_state != ISAL_BLOCK_FINISH)) clean = false;
  }
  drop_recycled();
  // Trailing bytes mean a second gzip member (also when not read yet); a short
  // output means the trailer lied.
  clean_ = clean && st.avail_in == 0 && gz_filled_ == gz_size && !read_short && done == cap;
  // Only the one-shot path needs the gzip bytes again: after a clean inflate,
  // only a reader that drops text as it goes (set_window) may still reload().
  if (clean_) {
    std::lock_guard lock(mutex_);
    if (!windowed_) {
      compressed_ = PaddedBuffer{};
      source_dropped_ = true;
    }
  }
}

std::string_view ArrivingText::gzip_bytes() {
  if (gz_filled_ < compressed_.size()) {
    compressed_ = read_file(origin_);
    gz_filled_ = compressed_.size();
  }
  return compressed_.view();
}

void ArrivingText::read_all() {
  const size_t cap = out_.size();
  size_t done = 0;
  while (done < cap) {
    wait_for_room(done);
    if (abandoned_.load(std::memory_order_acquire)) break;
    back_ahead(done, std::min(kStepBytes, cap - done));
    ssize_t n = ::read(fd_, out_.data() + done, std::min(kStepBytes, cap - done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // an error, or the file shrank: the one-shot path says which
    done += static_cast<size_t>(n);
    publish(done);
  }
  drop_recycled();
  char extra;
  clean_ = done == cap && ::read(fd_, &extra, 1) == 0;  // and it did not grow
}

size_t ArrivingText::wait_for(size_t n) {
  size_t have = produced_.load(std::memory_order_acquire);
  if (have >= n || stopped()) return have;
  std::unique_lock lock(mutex_);
  if (n > wanted_) {
    // A reader that needs bytes beyond the window (one event longer than it)
    // has nothing to release until they come: let the producer past it.
    wanted_ = n;
    room_.notify_all();
  }
  progress_.wait(lock, [&] { return produced_.load(std::memory_order_acquire) >= n || stopped(); });
  return produced_.load(std::memory_order_acquire);
}

ArrivingText::Result ArrivingText::finish() {
  lift_window();
  if (thread_.joinable()) thread_.join();
  if (clean_) return {std::move(out_), true};
  // out_ stays until destruction: readers may still hold views into it.
  if (fd_ >= 0) return {read_file(origin_), false};
  return {gunzip(gzip_bytes(), origin_), false};
}

PaddedBuffer ArrivingText::reload() {
  lift_window();
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) return read_file(origin_);
  return gunzip(gzip_bytes(), origin_);
}

}  // namespace magpie
