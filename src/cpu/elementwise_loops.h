// Loops of the CPU elementwise ops (unary, binary, where_cond) over strided.h's for_each_chunk.
// Row kernels pick their loop from the inner strides once per chunk: unit stride (flat,
// vectorisable) or stride 0 (a broadcast scalar, loaded once) for each operand, and a general
// strided loop otherwise.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "cpu/strided.h"

namespace wick::cpu::ew_loops {

// dst = f(src) for one element type T (same in and out), f taking and returning T.
template <class T, class F>
void unary(const F& f, const TensorArg& src, const TensorArg& dst) {
  const Collapsed<2> c = collapse<2>(dst.shape(), {&dst.layout.strides(), &src.layout.strides()});
  T* const out = dst.ptr<T>();
  const T* const in = src.ptr<T>();
  for_each_chunk<2>(c, [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
    T* o = out + off[0];
    const T* s = in + off[1];
    if (st[0] == 1 && st[1] == 1) {
      for (int64_t j = 0; j < n; ++j) o[j] = f(s[j]);
    } else {
      for (int64_t j = 0; j < n; ++j) o[j * st[0]] = f(s[j * st[1]]);
    }
  });
}

// body(o, x, y, n, st) for each chunk of a binary op dst(Out) = f(a(T), b(T)): the three operands'
// pointers at the chunk's first element, its length and their strides along it.
template <class T, class Out, class Body>
void for_each_binary_chunk(const TensorArg& a, const TensorArg& b, const TensorArg& dst, const Body& body) {
  const Collapsed<3> c = collapse<3>(dst.shape(), {&dst.layout.strides(), &a.layout.strides(), &b.layout.strides()});
  Out* const out = dst.ptr<Out>();
  const T* const pa = a.ptr<T>();
  const T* const pb = b.ptr<T>();
  for_each_chunk<3>(c, [&](const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& st) {
    body(out + off[0], pa + off[1], pb + off[2], n, st);
  });
}

// dst = f(load(a), load(b)), f returning Out. Operands of a broadcast scalar along the row are
// loaded (and converted) once per chunk.
template <class T, class Out, class Load, class F>
void binary(const Load& load, const F& f, const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  for_each_binary_chunk<T, Out>(a, b, dst,
                                [&](Out* o, const T* x, const T* y, int64_t n, const std::array<int64_t, 3>& st) {
                                  if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
                                    for (int64_t j = 0; j < n; ++j) o[j] = f(load(x[j]), load(y[j]));
                                  } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
                                    const auto yv = load(y[0]);
                                    for (int64_t j = 0; j < n; ++j) o[j] = f(load(x[j]), yv);
                                  } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
                                    const auto xv = load(x[0]);
                                    for (int64_t j = 0; j < n; ++j) o[j] = f(xv, load(y[j]));
                                  } else {
                                    for (int64_t j = 0; j < n; ++j)
                                      o[j * st[0]] = f(load(x[j * st[1]]), load(y[j * st[2]]));
                                  }
                                });
}

// dst = cond != 0 ? t : f, for a value type V of the element's size (the bits are copied).
template <class Cond, class V>
void where(const TensorArg& cond, const TensorArg& t, const TensorArg& f, const TensorArg& dst) {
  const Collapsed<4> c = collapse<4>(
      dst.shape(), {&dst.layout.strides(), &cond.layout.strides(), &t.layout.strides(), &f.layout.strides()});
  V* const out = dst.ptr<V>();
  const Cond* const pc = cond.ptr<Cond>();
  const V* const pt = t.ptr<V>();
  const V* const pf = f.ptr<V>();
  for_each_chunk<4>(c, [&](const std::array<int64_t, 4>& off, int64_t n, const std::array<int64_t, 4>& st) {
    V* o = out + off[0];
    const Cond* k = pc + off[1];
    const V* x = pt + off[2];
    const V* y = pf + off[3];
    // Unit or zero stride for t and f, decided at compile time (a scalar branch, e.g.
    // where(mask, x, 0), is common).
    // Both branches are loaded unconditionally: a conditional load keeps the loop from being
    // vectorised (into a blend).
    auto flat = [&]<bool kTUnit, bool kFUnit>() {
      for (int64_t j = 0; j < n; ++j) {
        const V xv = x[kTUnit ? j : 0], yv = y[kFUnit ? j : 0];
        o[j] = k[j] != 0 ? xv : yv;
      }
    };
    if (st[0] == 1 && st[1] == 1 && (st[2] == 0 || st[2] == 1) && (st[3] == 0 || st[3] == 1)) {
      if (st[2] == 1 && st[3] == 1) {
        flat.template operator()<true, true>();
      } else if (st[2] == 1) {
        flat.template operator()<true, false>();
      } else if (st[3] == 1) {
        flat.template operator()<false, true>();
      } else {
        flat.template operator()<false, false>();
      }
    } else {
      for (int64_t j = 0; j < n; ++j) o[j * st[0]] = k[j * st[1]] != 0 ? x[j * st[2]] : y[j * st[3]];
    }
  });
}

}  // namespace wick::cpu::ew_loops
