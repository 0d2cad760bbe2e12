// sort and argsort on the CPU (CpuBackend::sort): over the last dim, any src / values / indices
// strides; rows by radix sort (Note [CPU radix sort]), short ones by std::stable_sort.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "backend/dispatch.h"
#include "backend/reduce_math.h"
#include "cpu/cpu_backend.h"
#include "cpu/row_loop.h"

namespace wick::cpu {
namespace {

template <class V>
struct Keyed {
  V key;
  int64_t index;
};

// Note [CPU radix sort]
// A row of the sort is ordered by an LSD radix sort on the keys of Note [Sort keys] (rows below
// kRadixMin still go through std::stable_sort with sort_before), which gives the same order. One
// pass over the keys counts every byte's digits; a byte whose digit is the same in every key (as
// the low 16 bits of a widened bf16) costs no pass; each other byte is one stable scatter of (key,
// index) pairs.
constexpr int64_t kRadixMin = 64;

// Sorts the row's n keys (key[0], changed) stably, and with them the positions 0..n-1; leaves the
// sorted positions in *order (pointing into pos[0] or pos[1]). key[1] and pos[1] are scratch of n.
template <class K, class I>
void radix_sort_row(K* key[2], I* pos[2], int64_t n, I** order) {
  constexpr int kBytes = sizeof(K);
  int64_t count[kBytes][256] = {};
  for (int64_t i = 0; i < n; ++i) {
    pos[0][i] = static_cast<I>(i);
    const K k = key[0][i];
    for (int d = 0; d < kBytes; ++d) ++count[d][(k >> (8 * d)) & 0xff];
  }
  int cur = 0;
  for (int d = 0; d < kBytes; ++d) {
    int64_t* c = count[d];
    if (c[(key[cur][0] >> (8 * d)) & 0xff] == n) continue;  // one digit in every key
    int64_t run = 0;
    for (int b = 0; b < 256; ++b) {
      const int64_t t = c[b];
      c[b] = run;
      run += t;
    }
    const K* ks = key[cur];
    const I* ps = pos[cur];
    K* kd = key[1 - cur];
    I* pd = pos[1 - cur];
    for (int64_t i = 0; i < n; ++i) {
      const int64_t at = c[(ks[i] >> (8 * d)) & 0xff]++;
      kd[at] = ks[i];
      pd[at] = ps[i];
    }
    cur = 1 - cur;
  }
  *order = pos[cur];
}

// The stable order of the row's n values (in, stride ss) under sort_before, into idx (stride is):
// radix (Note [CPU radix sort]) with positions of type I, or std::stable_sort below kRadixMin.
template <class T, class I>
void sort_row(const T* in, int64_t ss, int64_t n, bool descending, int64_t* idx, int64_t is) {
  using V = cmp_t<T>;
  if (n < kRadixMin) {
    thread_local std::vector<Keyed<V>> row;
    row.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) row[static_cast<size_t>(i)] = {static_cast<V>(in[i * ss]), i};
    std::stable_sort(row.begin(), row.end(), [descending](const Keyed<V>& a, const Keyed<V>& b) {
      return sort_before(a.key, b.key, descending);
    });
    for (int64_t i = 0; i < n; ++i) idx[i * is] = row[static_cast<size_t>(i)].index;
    return;
  }
  using K = order_key_t<V>;
  thread_local std::vector<K> keys;
  thread_local std::vector<I> positions;
  keys.resize(static_cast<size_t>(2 * n));
  positions.resize(static_cast<size_t>(2 * n));
  K* key[2] = {keys.data(), keys.data() + n};
  I* pos[2] = {positions.data(), positions.data() + n};
  for (int64_t i = 0; i < n; ++i) key[0][i] = order_key(static_cast<V>(in[i * ss]), descending);
  I* order = nullptr;
  radix_sort_row(key, pos, n, &order);
  for (int64_t i = 0; i < n; ++i) idx[i * is] = static_cast<int64_t>(order[i]);
}

// A row's work for the split of rows over threads: the radix sort reads and writes the row about
// once per key byte, plus the counting pass and the gathers of positions and values around them;
// std::stable_sort's short rows cost about n log n.
template <class T>
int64_t sort_row_work(int64_t n) {
  if (n < kRadixMin) return n * (64 - __builtin_clzll(static_cast<unsigned long long>(n) | 1));
  return n * static_cast<int64_t>(sizeof(order_key_t<cmp_t<T>>) + 3);
}

}  // namespace

void CpuBackend::sort(const TensorArg& src, const TensorArg& values, const TensorArg& indices, bool descending) {
  dispatch(
      src.dtype,
      [&]<class T>() {
        if (src.numel() == 0) return;
        const int64_t n = src.layout.shape().back();
        const int64_t ss = src.layout.strides().back(), is = indices.layout.strides().back();
        const bool want_values = values.data != nullptr;
        const T* in = src.ptr<T>();
        int64_t* idx = indices.ptr<int64_t>();
        T* val = want_values ? values.ptr<T>() : nullptr;
        const int64_t vs = want_values ? values.layout.strides().back() : 0;
        const Strides& vstr = want_values ? values.layout.strides() : indices.layout.strides();
        const bool narrow = n <= int64_t{std::numeric_limits<uint32_t>::max()};  // positions fit 32 bits
        for_each_last_dim_row<3>(src.shape(), {&src.layout.strides(), &indices.layout.strides(), &vstr},
                                 sort_row_work<T>(n), [&](const std::array<int64_t, 3>& off) {
                                   int64_t* row_idx = idx + off[1];
                                   if (narrow) {
                                     sort_row<T, uint32_t>(in + off[0], ss, n, descending, row_idx, is);
                                   } else {
                                     sort_row<T, int64_t>(in + off[0], ss, n, descending, row_idx, is);
                                   }
                                   if (want_values)
                                     for (int64_t i = 0; i < n; ++i)
                                       val[off[2] + i * vs] = in[off[0] + row_idx[i * is] * ss];
                                 });
      },
      "sort");
}

}  // namespace wick::cpu
