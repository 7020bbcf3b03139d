#pragma once
// The Markdown table `magpie analyze|compare` prints on stdout.
#include <optional>
#include <string>
#include <vector>

#include "kernel/evaluation.hpp"
#include "kernel/ranking.hpp"

namespace magpie::kernel {

std::string markdown_table(const std::vector<Evaluation>& evals, const Ranking* ranking = nullptr);

}  // namespace magpie::kernel
