#pragma once
// The CSV line splitter lives in core (one for every reader); profiler code
// keeps calling it by this name.
#include "core/csv_line.hpp"

namespace magpie::profiler {

using magpie::split_csv_line;

}  // namespace magpie::profiler
