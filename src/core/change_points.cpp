#include "core/change_points.hpp"

#include <algorithm>
#include <cmath>

namespace magpie::stats {

namespace {

// splitmix64: a small, fully specified generator (std::shuffle's use of a
// distribution differs between standard libraries; this does not).
struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) by rejection (no modulo bias).
  size_t below(size_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = next();
    while (x >= limit);
    return static_cast<size_t>(x % n);
  }
};

// The same swaps as shuffling the values themselves: values[perm[k]] is the shuffled series.
void shuffle(std::vector<size_t>& perm, SplitMix& rng) {
  for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.below(i)]);
}

// Each value's rank among the values, and the prefix sums of the sorted values.
// A shuffle of the values shuffles their ranks and leaves the sums: the
// permutation test ranks a segment once, not once a shuffle.
struct Ranks {
  std::vector<size_t> rank;
  std::vector<double> prefix;
};

Ranks rank_values(std::span<const double> y) {
  const size_t m = y.size();
  std::vector<size_t> order(m);
  for (size_t i = 0; i < m; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return y[a] < y[b]; });
  Ranks r{std::vector<size_t>(m), std::vector<double>(m + 1, 0)};
  for (size_t k = 0; k < m; ++k) {
    r.rank[order[k]] = k;
    r.prefix[k + 1] = r.prefix[k] + y[order[k]];
  }
  return r;
}

Split split_search(std::span<const double> y, const std::vector<size_t>& rank,
                   const std::vector<double>& prefix, size_t min_size) {
  const size_t m = y.size();
  min_size = std::max<size_t>(min_size, 2);  // a part needs a pair for its own spread
  if (m < 2 * min_size) return {};
  // Move points one by one from the right part to the left, keeping the three
  // sums of distances: between (A), within left (B), within right (C). A
  // point's distances to all others come from the sorted values' prefix sums,
  // and to the left part from a Fenwick tree over value ranks (count and sum
  // of the values already moved), so a split search is O(m log m), not O(m²):
  // the permutation test runs it 200 times per change point.
  auto to_all = [&](size_t t) {
    const double r = static_cast<double>(rank[t]);
    return y[t] * r - prefix[rank[t]] + (prefix[m] - prefix[rank[t] + 1]) -
           y[t] * (static_cast<double>(m) - r - 1);
  };
  std::vector<double> tree_count(m + 1, 0), tree_sum(m + 1, 0);
  auto add = [&](size_t r, double v) {
    for (size_t i = r + 1; i <= m; i += i & (~i + 1)) {
      tree_count[i] += 1;
      tree_sum[i] += v;
    }
  };
  auto below = [&](size_t r, double& count, double& sum) {  // ranks < r
    count = sum = 0;
    for (size_t i = r; i > 0; i -= i & (~i + 1)) {
      count += tree_count[i];
      sum += tree_sum[i];
    }
  };
  double a = 0, b = 0, c = 0, moved_sum = 0;
  for (size_t t = 0; t < m; ++t) c += to_all(t);
  c /= 2;
  Split best;
  for (size_t t = 0; t + min_size < m; ++t) {
    double less_count, less_sum;
    below(rank[t], less_count, less_sum);
    const double more_count = static_cast<double>(t) - less_count, more_sum = moved_sum - less_sum;
    // y[t]'s distances to the left part, and to the rest of the right part.
    const double to_left = y[t] * less_count - less_sum + more_sum - y[t] * more_count;
    const double to_right = to_all(t) - to_left;
    add(rank[t], y[t]);
    moved_sum += y[t];
    a += to_right - to_left;
    b += to_left;
    c -= to_right;
    const size_t tau = t + 1;  // the left part is now y[0..tau)
    if (tau < min_size) continue;
    const double nl = static_cast<double>(tau), nr = static_cast<double>(m - tau);
    const double e = 2 * a / (nl * nr) - b / (nl * (nl - 1) / 2) - c / (nr * (nr - 1) / 2);
    const double q = nl * nr / static_cast<double>(m) * e;
    if (q > best.q || best.index == 0) best = {tau, q};
  }
  return best;
}

}  // namespace

Split best_split(std::span<const double> y, size_t min_size) {
  if (y.size() < 2 * std::max<size_t>(min_size, 2)) return {};
  const Ranks r = rank_values(y);
  return split_search(y, r.rank, r.prefix, min_size);
}

std::vector<ChangePoint> e_divisive(std::span<const double> values,
                                    const ChangePointSettings& settings) {
  std::vector<ChangePoint> found;
  struct Segment {
    size_t begin, end;
    Split split;
  };
  auto make = [&](size_t begin, size_t end) {
    return Segment{begin, end, best_split(values.subspan(begin, end - begin), settings.min_size)};
  };
  std::vector<Segment> segments{make(0, values.size())};
  SplitMix rng{settings.seed};
  const int perms = std::max(settings.permutations, 1);
  // A shuffle beats the observed Q k times; once (k+1)/(P+1) > alpha the split
  // cannot be significant: stop early (an insignificant test costs few shuffles).
  const double needed = settings.alpha * (perms + 1) - 1;
  while (found.size() < settings.max_change_points) {
    auto it = std::max_element(segments.begin(), segments.end(), [](const auto& l, const auto& r) {
      return l.split.index == 0 || (r.split.index != 0 && l.split.q < r.split.q);
    });
    if (it == segments.end() || it->split.index == 0) break;
    const auto segment = values.subspan(it->begin, it->end - it->begin);
    const Ranks ranks = rank_values(segment);
    std::vector<size_t> perm(segment.size()), shuffled_rank(segment.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = i;
    std::vector<double> shuffled(segment.size());
    int beaten = 0, done = 0;
    for (; done < perms && beaten <= needed; ++done) {
      if (beaten == 0 && done == settings.decisive) break;  // none beat it: clearly significant
      shuffle(perm, rng);
      for (size_t i = 0; i < perm.size(); ++i) {
        shuffled[i] = segment[perm[i]];
        shuffled_rank[i] = ranks.rank[perm[i]];
      }
      // A shuffle that puts the same values on each side has the same Q; summed in another
      // order it may come out a rounding error below. It counts as beating the split.
      const double tie = 1e-9 * std::fabs(it->split.q);
      if (split_search(shuffled, shuffled_rank, ranks.prefix, settings.min_size).q >=
          it->split.q - tie)
        ++beaten;
    }
    const double p = (beaten + 1.0) / (done + 1.0);
    if (beaten > needed || p > settings.alpha) break;
    const size_t at = it->begin + it->split.index;
    found.push_back({at, it->split.q, p});
    const size_t begin = it->begin, end = it->end;
    *it = make(begin, at);
    segments.push_back(make(at, end));
  }
  std::sort(found.begin(), found.end(),
            [](const ChangePoint& l, const ChangePoint& r) { return l.index < r.index; });
  return found;
}

}  // namespace magpie::stats
