// attention_decode on the CPU (Note [Decode attention] in src/core/ops_attention.cpp): the cache
// rows written, then one softmax-weighted sum per query head, heads spread over the threads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/dispatch.h"
#include "cpu/cpu_backend.h"
#include "cpu/parallel.h"

namespace wick::cpu {

namespace {

template <class C>
void attention_typed(const TensorArg& q, const TensorArg& k, const TensorArg& v, const TensorArg& kc,
                     const TensorArg& vc, const TensorArg& position, const AttentionParams& p, const TensorArg& dst) {
  const int64_t heads = q.shape()[0], d = q.shape()[1], kv = kc.shape()[0], cap = kc.shape()[1];
  const int64_t group = heads / kv;
  const int64_t pos = position.data ? int64_t{*position.ptr<int32_t>()} : p.position;
  float* out = dst.ptr<float>();
  const int64_t os = dst.layout.stride(0), od = dst.layout.stride(1);
  if (pos < 0 || pos >= cap) {
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < d; ++i) out[h * os + i * od] = 0.0f;
    return;
  }
  C* kp = kc.ptr<C>();
  C* vp = vc.ptr<C>();
  const int64_t k0 = kc.layout.stride(0), k1 = kc.layout.stride(1);
  const int64_t v0 = vc.layout.stride(0), v1 = vc.layout.stride(1);
  for (int64_t j = 0; j < kv; ++j)
    for (int64_t i = 0; i < d; ++i) {
      kp[j * k0 + pos * k1 + i] = convert<C>(k.ptr<float>()[j * k.layout.stride(0) + i * k.layout.stride(1)]);
      vp[j * v0 + pos * v1 + i] = convert<C>(v.ptr<float>()[j * v.layout.stride(0) + i * v.layout.stride(1)]);
    }
  const int64_t n = pos + 1;
  const float scale = static_cast<float>(p.scale);
  // A head's work is about 4 n d reads and products.
  parallel_for(heads, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, 4 * n * d)), [&](int64_t h0, int64_t h1) {
    std::vector<float> qrow(static_cast<size_t>(d)), w(static_cast<size_t>(n)), acc(static_cast<size_t>(d));
    for (int64_t h = h0; h < h1; ++h) {
      const int64_t j = h / group;
      for (int64_t i = 0; i < d; ++i) qrow[i] = q.ptr<float>()[h * q.layout.stride(0) + i * q.layout.stride(1)];
      float m = -INFINITY;
      for (int64_t s = 0; s < n; ++s) {
        const C* key = kp + j * k0 + s * k1;
        float dot = 0;
        for (int64_t i = 0; i < d; ++i) dot += qrow[i] * convert<float>(key[i]);
        w[s] = dot * scale;
        m = std::max(m, w[s]);
      }
      double sum = 0;
      for (int64_t s = 0; s < n; ++s) {
        w[s] = std::exp(w[s] - m);
        sum += w[s];
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t s = 0; s < n; ++s) {
        const C* val = vp + j * v0 + s * v1;
        for (int64_t i = 0; i < d; ++i) acc[i] += w[s] * convert<float>(val[i]);
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t i = 0; i < d; ++i) out[h * os + i * od] = acc[i] * inv;
    }
  });
}

}  // namespace

void CpuBackend::attention_decode(const TensorArg& q, const TensorArg& k, const TensorArg& v, const TensorArg& k_cache,
                                  const TensorArg& v_cache, const TensorArg& position, const AttentionParams& p,
                                  const TensorArg& dst) {
  dispatch_in<kQuantFloatTypes>(
      k_cache.dtype, [&]<class C>() { attention_typed<C>(q, k, v, k_cache, v_cache, position, p, dst); },
      "attention_decode");
}

}  // namespace wick::cpu
