#pragma once
// Facts about the recording process and its surroundings that a results row
// keeps: time, host, pid (with its start time, to tell a reused pid), and the
// git commit of a working directory.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace magpie::store {

// Now as ISO-8601 UTC with milliseconds: 2026-12-03T07:55:27.123Z.
std::string iso_utc_now();
// A file time as ISO-8601 UTC (seconds).
std::string iso_utc(std::filesystem::file_time_type t);
// Seconds since the epoch of an ISO-8601 UTC time written by the two above; nullopt if unparsable.
std::optional<double> parse_iso_utc(std::string_view iso);

std::string host_name();
// The process's start time in clock ticks since boot (/proc/PID/stat field 22);
// nullopt when the process does not exist (or /proc is unavailable).
std::optional<int64_t> process_start_ticks(int64_t pid);
// True unless `pid` is certainly gone (ESRCH) or is now a different process
// (its start time differs from `start_ticks`, when that is known).
bool process_alive(int64_t pid, std::optional<int64_t> start_ticks);

// `git -C dir rev-parse HEAD`, or "" when dir is empty, not in a repository,
// or git is not installed. Never throws.
std::string git_commit(const std::filesystem::path& dir);

// A stable short hash (FNV-1a 64, hex) of a run's configuration text, for
// RunStart::config_hash: the same config gives the same hash on every host.
std::string hash_config(std::string_view text);

}  // namespace magpie::store
