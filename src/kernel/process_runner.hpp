#pragma once
// Kernel evaluation's use of the one process runner (core/child_process.hpp):
// every build and testcase in its own process group, output to its log after a
// "$ command" line, a timeout that kills the whole group.
#include "core/child_process.hpp"
#include "kernel/command.hpp"

namespace magpie::kernel {

using magpie::log_tail;
using magpie::ProcessResult;
using magpie::ProcessSpec;
using magpie::run_process;

}  // namespace magpie::kernel
