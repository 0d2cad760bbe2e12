// Generation: the prompt through the model, then one sampled token at a time, streamed as text.
#include <chrono>

#include "llm/llm_internal.h"
#include "wick/error.h"

namespace wick::llm {

double GenerateStats::prefill_tokens_per_second() const {
  return prefill_seconds > 0 ? static_cast<double>(prompt_tokens) / prefill_seconds : 0;
}
double GenerateStats::decode_tokens_per_second() const {
  // The first generated token comes from the prefill's logits; decode times the rest.
  return decode_seconds > 0 && generated_tokens > 1 ? static_cast<double>(generated_tokens - 1) / decode_seconds : 0;
}

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Bytes at the end of `s` that start a UTF-8 character not yet complete.
size_t incomplete_utf8_tail(const std::string& s) {
  const size_t n = s.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const auto c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    return len > back ? back : 0;
  }
  return 0;  // four continuation bytes: not UTF-8, pass them on
}

}  // namespace

GenerateStats Model::generate(std::string_view prompt, const GenerateOptions& options, const TokenCallback& on_token) {
  const std::vector<int32_t> ids = tokenizer().encode(prompt, options.add_special, true);
  return generate(std::span<const int32_t>(ids), options, on_token);
}

GenerateStats Model::generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                              const TokenCallback& on_token) {
  if (prompt.empty()) throw InvalidArgument(detail::tag("generate from an empty prompt"));
  if (options.max_tokens < 0)
    throw InvalidArgument(detail::tag("max_tokens " + std::to_string(options.max_tokens) + " < 0"));
  const int64_t n = static_cast<int64_t>(prompt.size());
  if (position() + n >= context())
    throw InvalidArgument(
        detail::tag("the prompt of " + std::to_string(n) + " tokens after " + std::to_string(position()) +
                    " cached positions leaves no room in the context of " + std::to_string(context())));
  Sampler sampler(options.sampler);
  std::vector<int32_t> history(prompt.begin(), prompt.end());
  std::vector<float> row;
  GenerateStats stats;
  stats.prompt_tokens = n;

  auto t0 = Clock::now();
  Tensor logits = forward(prompt, false);
  row = logits.to_vector<float>();  // waits for the device
  stats.prefill_seconds = seconds_since(t0);

  std::string pending;  // bytes of a character not yet complete
  bool stopped = false;
  const Clock::time_point t1 = Clock::now();
  for (int64_t i = 0; i < options.max_tokens; ++i) {
    const int32_t id = sampler.sample(row, history);
    if (options.stop_at_end && tokenizer().is_end_of_generation(id)) break;
    history.push_back(id);
    ++stats.generated_tokens;
    if (on_token) {
      // A model's vocabulary may be padded past its tokenizer's: those ids have no text.
      if (id < tokenizer().vocab_size() && !tokenizer().is_special(id)) pending += tokenizer().piece(id);
      const size_t keep = incomplete_utf8_tail(pending);
      const std::string text = pending.substr(0, pending.size() - keep);
      pending.erase(0, pending.size() - keep);
      if (!on_token(id, text)) {
        stopped = true;
        break;
      }
    }
    if (i + 1 == options.max_tokens || position() >= context()) break;
    const int32_t next[1] = {id};
    row = forward(next, false).to_vector<float>();
  }
  stats.decode_seconds = seconds_since(t1);
  // Bytes that never completed a character (the text is not UTF-8 there) are not held back, unless
  // the callback asked to stop.
  if (on_token && !stopped && !pending.empty()) on_token(-1, pending);
  return stats;
}

}  // namespace wick::llm
