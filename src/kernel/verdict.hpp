#pragma once
// The kernel pipeline's verdict names: the rule itself lives in core/verdict.hpp,
// shared with the results diff.
#include "core/verdict.hpp"

namespace magpie::kernel {

using stats::compare_samples;
using stats::median_of;
using stats::SpeedupEstimate;
using stats::to_string;
using stats::Verdict;
using stats::VerdictSettings;

}  // namespace magpie::kernel
