#pragma once
// Progress of long work for a person watching stderr: one line rewritten in
// place on a terminal, or plain lines (with --progress) when stderr is a file
// or pipe, and nothing otherwise. Jobs report (done, total, message) through
// JobContext::progress; this adds the time spent in the current step (against
// its limit when one is known, e.g. the server-ready timeout), the rate, and
// an ETA when a total is known. A ticker re-draws once a second, so a silent
// wait still shows its clock moving.
#include <chrono>
#include <condition_variable>
#include <iosfwd>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace magpie {

enum class ProgressStyle { kOff, kTerminal, kLines };

// A terminal gets the live line; otherwise plain lines only when asked for.
ProgressStyle progress_style(bool stderr_is_terminal, bool lines_requested);

// What one line says; pure, for tests. `eta_s` < 0: unknown.
struct ProgressState {
  std::string message;
  double done = 0;
  std::optional<double> total;
  double step_elapsed_s = 0;
  std::optional<double> step_limit_s;
  double eta_s = -1;
  std::string detail;  // after the clock (e.g. a wait's last error)
};
std::string format_progress(const ProgressState& state);
std::string format_duration(double seconds);  // "7s", "2m05s", "1h02m"

class ProgressLine {
 public:
  ProgressLine(ProgressStyle style, std::ostream& out, int width = 0);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool active() const { return style_ != ProgressStyle::kOff; }
  // Steps whose message starts with `prefix` show their elapsed time against
  // `limit_s`, and `note` after the message (e.g. the address awaited).
  void set_limit(std::string prefix, double limit_s, std::string note = {});
  // Thread-safe.
  void update(double done, std::optional<double> total, const std::string& message);
  // Ends the live line (so what follows starts on a fresh line) and stops the ticker.
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  void draw_locked(bool forced);
  void tick();

  ProgressStyle style_;
  std::ostream& out_;
  int width_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false, drawn_ = false;
  struct StepLimit {
    std::string prefix;
    double limit_s = 0;
    std::string note;
  };
  std::vector<StepLimit> limits_;
  std::string message_, step_;
  std::string last_line_shape_;  // kLines: the last printed message without its digits
  double done_ = 0;
  std::optional<double> total_;
  Clock::time_point step_start_{}, last_line_{}, last_draw_{};
  // The first report with a total starts the ETA's clock.
  std::optional<std::pair<Clock::time_point, double>> eta_origin_;
  std::thread ticker_;
};

}  // namespace magpie
