#include "core/progress_line.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ostream>

namespace magpie {

ProgressStyle progress_style(bool stderr_is_terminal, bool lines_requested) {
  if (stderr_is_terminal) return ProgressStyle::kTerminal;
  return lines_requested ? ProgressStyle::kLines : ProgressStyle::kOff;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  auto s = static_cast<long long>(std::llround(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

std::string format_progress(const ProgressState& st) {
  std::string line = st.message;
  if (st.total && *st.total > 0)
    line += fmt::format("  [{:.0f}%]", std::clamp(100.0 * st.done / *st.total, 0.0, 100.0));
  if (st.step_limit_s)
    line += fmt::format("  {} of {} limit", format_duration(st.step_elapsed_s),
                        format_duration(*st.step_limit_s));
  else
    line += fmt::format("  {}", format_duration(st.step_elapsed_s));
  if (st.eta_s >= 0) line += fmt::format("  ETA {}", format_duration(st.eta_s));
  if (!st.detail.empty()) line += "  " + st.detail;
  return line;
}

namespace {

int terminal_width() {
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20) return ws.ws_col;
  return 100;
}

// The step a message belongs to: its text before the first ':' ("case 1/3: 12/100 done").
std::string step_of(const std::string& message) { return message.substr(0, message.find(':')); }

// A message with its numbers taken out: what stays the same while only counters move.
std::string without_digits(const std::string& message) {
  std::string out;
  for (char ch : message)
    if (ch < '0' || ch > '9') out.push_back(ch);
  return out;
}

}  // namespace

ProgressLine::ProgressLine(ProgressStyle style, std::ostream& out, int width)
    : style_(style), out_(out), width_(width > 0 ? width : terminal_width()) {
  if (active()) ticker_ = std::thread([this] { tick(); });
}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::set_limit(std::string prefix, double limit_s, std::string note) {
  std::lock_guard lock(mu_);
  limits_.push_back({std::move(prefix), limit_s, std::move(note)});
}

void ProgressLine::update(double done, std::optional<double> total, const std::string& message) {
  if (!active()) return;
  std::lock_guard lock(mu_);
  if (stopping_) return;
  const auto now = Clock::now();
  std::string step = step_of(message);
  bool new_step = step != step_ || !drawn_;
  if (new_step) {
    step_ = step;
    step_start_ = now;
  }
  if (total && *total > 0) {
    if (!eta_origin_ || (total_ && *total_ != *total)) eta_origin_ = {now, done};
  } else {
    eta_origin_.reset();
  }
  message_ = message;
  done_ = done;
  total_ = total;
  draw_locked(new_step);
}

void ProgressLine::draw_locked(bool forced) {
  const auto now = Clock::now();
  ProgressState st;
  st.message = message_;
  st.done = done_;
  st.total = total_;
  st.step_elapsed_s = std::chrono::duration<double>(now - step_start_).count();
  for (const auto& l : limits_) {
    if (message_.rfind(l.prefix, 0) != 0) continue;
    st.step_limit_s = l.limit_s;
    // A wait shows what it waits for (the note), its clock, then the details
    // after the step's ':' (the last error): a narrow terminal cuts the details first.
    st.message = l.note.empty() ? step_ : step_ + " " + l.note;
    if (message_.size() > step_.size() + 1) {
      st.detail = message_.substr(step_.size() + 1);
      while (!st.detail.empty() && st.detail.front() == ' ') st.detail.erase(0, 1);
    }
  }
  if (eta_origin_ && total_ && done_ > eta_origin_->second) {
    double spent = std::chrono::duration<double>(now - eta_origin_->first).count();
    st.eta_s = spent * (*total_ - done_) / (done_ - eta_origin_->second);
  }
  std::string line = format_progress(st);
  if (style_ == ProgressStyle::kTerminal) {
    // At most ten redraws a second: a fast stream of reports must not flood the terminal.
    if (!forced && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    if (static_cast<int>(line.size()) > width_ - 1) line.resize(static_cast<size_t>(width_ - 1));
    out_ << "\r\033[K" << line << std::flush;  // rewrite in place, clearing the rest
  } else {
    // Plain lines: a new step or news (text other than counters, e.g. a new
    // last error) at once, the same step at most every 10 s.
    const std::string shape = without_digits(message_);
    if (!forced && shape == last_line_shape_ && now - last_line_ < std::chrono::seconds(10))
      return;
    out_ << line << "\n" << std::flush;
    last_line_ = now;
    last_line_shape_ = shape;
  }
  drawn_ = true;
}

void ProgressLine::tick() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::seconds(1));
    if (!stopping_ && drawn_) draw_locked(false);
  }
}

void ProgressLine::finish() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    if (style_ == ProgressStyle::kTerminal && drawn_) out_ << "\r\033[K" << std::flush;
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

}  // namespace magpie
