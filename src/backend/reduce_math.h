// Numerics of the reductions, scans, normalisations and sorts, shared by the CPU loops and the GPU
// kernels (DESIGN principle 4). Only per-element / per-pair math lives here; how elements are
// visited is each backend's business.
//
// Note [Reduction accumulators]
// sum accumulates integers in 64 bits with wrap-around (unsigned arithmetic, so that overflow is
// defined) and converts once on store, so u8/u32 sums wrap like a cast; 16/8-bit floats and f32
// accumulate in f32, f64 in f64. Float sums must not be one sequential chain: the CPU keeps several
// lanes per block and adds block results pairwise (Pairwise below), a GPU adds tree-wise. A
// scan (cumsum) cannot be split that way on the CPU, so f32 scans carry an f64 running sum.
//
// Note [NaN order]
// min/max propagate NaN. argmin/argmax treat NaN as the extreme value: the first NaN wins, and
// among equal values the first index wins. sort places NaN after +inf (ascending) or before it
// (descending); equal keys keep their input order (stable).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "wick/dtype.h"

namespace wick {

template <class T>
using sum_acc_t = std::conditional_t<std::is_integral_v<T>, uint64_t, compute_t<T>>;
template <class T>
using scan_acc_t = std::conditional_t<std::is_same_v<T, float>, double, sum_acc_t<T>>;
// min/max/arg/sort compare in the compute type: exact for every dtype.
template <class T>
using cmp_t = compute_t<T>;

template <class V>
WICK_HOST_DEVICE inline bool is_nan_value(V v) {
  if constexpr (std::is_floating_point_v<V>) {
    return v != v;
  } else {
    return false;
  }
}

// The value of a sum accumulator as element type T (integers wrap; see Note [Reduction accumulators]).
template <class T, class Acc>
WICK_HOST_DEVICE inline T sum_store(Acc a) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(a);
  } else {
    return convert<T>(a);
  }
}
template <class Acc, class T>
WICK_HOST_DEVICE inline Acc sum_load(T v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<Acc>(static_cast<int64_t>(v));  // sign-extends i64 so wrap-around is right
  } else {
    return static_cast<Acc>(static_cast<compute_t<T>>(v));
  }
}

// mean = sum / count in the compute type; count 0 gives NaN (0 / 0).
template <class Acc>
WICK_HOST_DEVICE inline Acc mean_of(Acc sum, int64_t count) {
  return sum / static_cast<Acc>(count);
}

template <bool IsMax, class V>
WICK_HOST_DEVICE inline V minmax_identity() {
  if constexpr (std::is_floating_point_v<V>) {
    return IsMax ? -std::numeric_limits<V>::infinity() : std::numeric_limits<V>::infinity();
  } else {
    return IsMax ? std::numeric_limits<V>::lowest() : std::numeric_limits<V>::max();
  }
}

// One step of a NaN-propagating min/max: keeps `acc` unless x is better or NaN. Written as a
// select so that loops over it vectorise.
template <bool IsMax, class V>
WICK_HOST_DEVICE inline V minmax_step(V acc, V x) {
  const bool better = IsMax ? (x > acc) : (x < acc);
  return (better || is_nan_value(x)) ? x : acc;
}

// The same without NaN handling, for loops that track NaN separately (a plain select vectorises
// to one min/max instruction; a NaN test in the same select does not).
template <bool IsMax, class V>
WICK_HOST_DEVICE inline V minmax_select(V acc, V x) {
  return (IsMax ? (x > acc) : (x < acc)) ? x : acc;
}

// Whether x beats best for argmin/argmax (strictly; see Note [NaN order]).
template <bool IsMax, class V>
WICK_HOST_DEVICE inline bool arg_better(V x, V best) {
  if (is_nan_value(best)) return false;
  if (is_nan_value(x)) return true;
  return IsMax ? (x > best) : (x < best);
}

// Strict weak order of sort keys (see Note [NaN order]).
template <class V>
WICK_HOST_DEVICE inline bool sort_before(V a, V b, bool descending) {
  const bool na = is_nan_value(a), nb = is_nan_value(b);
  if (descending) return na ? !nb : (!nb && a > b);
  return nb ? !na : (!na && a < b);
}

// Note [Sort keys]
// The radix sorts (CPU and GPU) order elements by an unsigned key whose integer order is
// sort_before's: floats by their bits with the sign bit set on positives and every bit flipped on
// negatives, -0 folded onto +0 (equal under sort_before) and every NaN the largest key; signed
// integers with their sign bit flipped; unsigned ones as they are; descending takes the
// complement (NaN then the smallest). Values equal under sort_before get equal keys, distinct ones
// distinct keys, so a stable sort by key is the stable sort under sort_before.
template <class V>
using order_key_t = std::conditional_t<sizeof(V) == 8, uint64_t, uint32_t>;

template <class V>
WICK_HOST_DEVICE inline order_key_t<V> order_key(V v, bool descending) {
  using K = order_key_t<V>;
  constexpr K kSign = K(1) << (8 * sizeof(K) - 1);
  K k;
  if constexpr (std::is_floating_point_v<V>) {
    static_assert(sizeof(V) == sizeof(K));
    if (is_nan_value(v)) {
      k = ~K(0);
    } else {
      const K bits = __builtin_bit_cast(K, v == V(0) ? V(0) : v);
      k = (bits & kSign) ? ~bits : (bits | kSign);
    }
  } else if constexpr (std::is_signed_v<V>) {
    k = static_cast<K>(v) ^ kSign;
  } else {
    k = static_cast<K>(v);
  }
  return descending ? ~k : k;
}

// Normalisation scale factors.
template <class C>
WICK_HOST_DEVICE inline C rms_scale(C sum_sq, int64_t n, double eps) {
  return C(1) / std::sqrt(sum_sq / static_cast<C>(n) + static_cast<C>(eps));
}
template <class C>
WICK_HOST_DEVICE inline C inv_std(C var, double eps) {
  return C(1) / std::sqrt(var + static_cast<C>(eps));
}

// Pairwise combination of a sequence of partial results, adjacent ones first (a binary counter),
// so error grows with log(count) rather than count. `merge(left, right)` must be associative;
// order is kept, so argmin/argmax ties still go to the left.
template <class Acc, int kLevels = 64>
struct Pairwise {
  Acc part[kLevels];
  int64_t size[kLevels];
  int n = 0;

  template <class Merge>
  WICK_HOST_DEVICE void push(Acc v, Merge merge) {
    int64_t s = 1;
    while (n > 0 && size[n - 1] == s) {
      v = merge(part[n - 1], v);
      s *= 2;
      --n;
    }
    part[n] = v;
    size[n] = s;
    ++n;
  }
  // The merge of everything pushed; `empty` when nothing was.
  template <class Merge>
  WICK_HOST_DEVICE Acc result(Acc empty, Merge merge) const {
    if (n == 0) return empty;
    Acc r = part[n - 1];
    for (int i = n - 2; i >= 0; --i) r = merge(part[i], r);
    return r;
  }
};

}  // namespace wick
