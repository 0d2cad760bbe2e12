// Sampling the next token from a row of logits.
#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "llm/llm_internal.h"
#include "wick/error.h"

namespace wick::llm {

namespace {

// splitmix64: a small generator whose stream depends on the seed alone.
uint64_t next_u64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

bool by_logit_desc(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

}  // namespace

Sampler::Sampler(const SamplerOptions& options) : options_(options), state_(options.seed) {
  const SamplerOptions& o = options;
  if (!(o.temperature >= 0) || o.top_k < 0 || !(o.top_p > 0 && o.top_p <= 1) || !(o.min_p >= 0 && o.min_p <= 1) ||
      !(o.repeat_penalty > 0) || o.repeat_last_n < 0)
    throw InvalidArgument(detail::tag("sampler options out of range: temperature " + std::to_string(o.temperature) +
                                      " (>= 0), top_k " + std::to_string(o.top_k) + " (>= 0), top_p " +
                                      std::to_string(o.top_p) + " (0, 1], min_p " + std::to_string(o.min_p) +
                                      " [0, 1], repeat_penalty " + std::to_string(o.repeat_penalty) +
                                      " (> 0), repeat_last_n " + std::to_string(o.repeat_last_n) + " (>= 0)"));
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  const SamplerOptions& o = options_;
  if (logits.empty()) throw InvalidArgument(detail::tag("sample from an empty row of logits"));
  work_.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) work_[i] = {logits[i], static_cast<int32_t>(i)};
  if (o.repeat_penalty != 1 && o.repeat_last_n > 0) {
    const size_t n = std::min(history.size(), static_cast<size_t>(o.repeat_last_n));
    std::unordered_set<int32_t> seen(history.end() - static_cast<std::ptrdiff_t>(n), history.end());
    for (int32_t id : seen) {
      if (id < 0 || static_cast<size_t>(id) >= work_.size()) continue;
      float& l = work_[static_cast<size_t>(id)].first;
      l = l > 0 ? static_cast<float>(l / o.repeat_penalty) : static_cast<float>(l * o.repeat_penalty);
    }
  }
  // NaN logits never win: they sort last.
  for (auto& w : work_)
    if (std::isnan(w.first)) w.first = -INFINITY;
  if (o.temperature == 0) return std::min_element(work_.begin(), work_.end(), by_logit_desc)->second;

  size_t keep = work_.size();
  if (o.top_k > 0 && static_cast<size_t>(o.top_k) < keep) keep = static_cast<size_t>(o.top_k);
  if (keep < work_.size() || o.top_p < 1 || o.min_p > 0) {
    // Only the filters need the order; a plain draw takes the vocabulary as it is.
    std::partial_sort(work_.begin(), work_.begin() + static_cast<std::ptrdiff_t>(keep), work_.end(), by_logit_desc);
    work_.resize(keep);
  }
  // Probabilities at the temperature (in descending order where a filter sorted them).
  const double top = std::min_element(work_.begin(), work_.end(), by_logit_desc)->first;  // the highest
  std::vector<double>& p = probs_;
  p.resize(keep);
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += p[i] = std::exp((work_[i].first - top) / o.temperature);
  for (double& v : p) v /= sum;
  if (o.top_p < 1) {
    double cum = 0;
    size_t n = 0;
    while (n < keep && cum < o.top_p) cum += p[n++];
    keep = std::max<size_t>(n, 1);
  }
  if (o.min_p > 0) {
    size_t n = 1;
    while (n < keep && p[n] >= o.min_p * p[0]) ++n;
    keep = n;
  }
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += p[i];
  // A uniform double in [0, total) from the top 53 bits.
  const double u = static_cast<double>(next_u64(state_) >> 11) * 0x1.0p-53 * total;
  double cum = 0;
  for (size_t i = 0; i < keep; ++i) {
    cum += p[i];
    if (u < cum) return work_[i].second;
  }
  return work_[keep - 1].second;
}

}  // namespace wick::llm
