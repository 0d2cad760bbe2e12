// Indexing on the CPU: index_select, gather, scatter / scatter_add, index_add.
//
// Note [Index kernels]
// The ops reduce to strided loops over an iteration shape with three operands:
//   gather-like   dst[i] = src[i + ids[i] * src_dim_stride]      (index_select, gather)
//   scatter-like  dst[i + ids[i] * dst_dim_stride] op= src[i]    (scatter, scatter_add)
// where the operand of the indexed tensor has stride 0 at `dim` (the id supplies that coordinate)
// and ids get stride 0 where they are broadcast (index_select's ids are 1-D along dim). index_add,
// one id per slice, has its own slice-wise loop.
// Ids are validated (and converted to i64 when they are u8 / u32) before anything is written, so an
// out-of-range id leaves the destination untouched.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "backend/dispatch.h"
#include "backend/index_functors.h"
#include "backend/index_geom.h"
#include "cpu/cpu_backend.h"
#include "cpu/strided.h"

namespace wick::cpu {
namespace {

using indexing::ids_along;
using indexing::kIdTypes;
using indexing::with_zero_at;

// Validated ids as i64: the caller's own ids when they are i64 already, else a contiguous copy.
struct Ids {
  std::vector<int64_t> buf;
  TensorArg arg;
};

int64_t id_at(const TensorArg& ids, int64_t flat) {
  const int64_t off = indexing::offset_of_position(ids.layout, flat);
  return dispatch_in<kIdTypes>(ids.dtype, [&]<class I>() { return static_cast<int64_t>(ids.ptr<I>()[off]); });
}

// Checks every id against [0, size) and returns them as i64. Throws IndexError naming the first
// (row-major) offending id.
Ids validate_ids(const char* op, const TensorArg& ids, int64_t size, int dim) {
  Ids out;
  const int64_t n = ids.numel();
  const bool copy = ids.dtype != DType::I64;
  if (copy) out.buf.resize(static_cast<size_t>(n));
  // The contiguous layout of ids' shape: its offsets are row-major positions.
  const Layout flat(ids.shape());
  std::atomic<int64_t> first_bad{n};
  dispatch_in<kIdTypes>(
      ids.dtype,
      [&]<class I>() {
        const I* p = ids.ptr<I>();
        const Collapsed<2> c = collapse<2>(ids.shape(), {&ids.layout.strides(), &flat.strides()});
        for_each_chunk<2>(c, [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& st) {
          if constexpr (!std::is_same_v<I, int64_t>) {
          } else if (!copy && st[0] == 1) {
            // i64 ids in place: a branch-free scan first (it vectorises); the loop below only runs on
            // a chunk that holds a bad id, to find the first one.
            const I* q = p + off[0];
            bool any_bad = false;
            for (int64_t j = 0; j < len; ++j) any_bad |= q[j] < 0 || q[j] >= static_cast<I>(size);
            if (!any_bad) return;
          }
          for (int64_t j = 0; j < len; ++j) {
            const I v = p[off[0] + j * st[0]];
            const int64_t pos = off[1] + j * st[1];
            bool bad;
            if constexpr (std::is_unsigned_v<I>) {
              bad = static_cast<uint64_t>(v) >= static_cast<uint64_t>(size);
            } else {
              bad = v < 0 || v >= size;
            }
            if (bad) {
              int64_t cur = first_bad.load();
              while (pos < cur && !first_bad.compare_exchange_weak(cur, pos)) {
              }
              return;  // later ids of this chunk come after pos
            }
            if (copy) out.buf[static_cast<size_t>(pos)] = static_cast<int64_t>(v);
          }
        });
      },
      op);
  if (first_bad.load() < n) throw indexing::out_of_range(op, id_at(ids, first_bad.load()), dim, size, "cpu");
  out.arg = copy ? TensorArg(out.buf.data(), DType::I64, flat) : TensorArg(ids.data, DType::I64, ids.layout);
  return out;
}

// See Note [Index kernels]. src points at the element of coordinate 0 (layout offset included) and
// src_strides has stride 0 at dim; everything is laid over dst's shape.
template <class T>
void gather_loop(const TensorArg& dst, const T* src, const Strides& src_strides, int64_t src_dim_stride,
                 const int64_t* ids, const Strides& ids_strides) {
  const Collapsed<3> c = collapse<3>(dst.shape(), {&dst.layout.strides(), &src_strides, &ids_strides});
  T* const out = dst.ptr<T>();
  for_each_row<3>(c, [&](const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& st) {
    T* o = out + off[0];
    const T* s = src + off[1];
    const int64_t* id = ids + off[2];
    if (st[2] == 0) {  // one id for the whole row: a plain (strided) row copy
      const T* row = s + *id * src_dim_stride;
      if (st[0] == 1 && st[1] == 1) {
        std::memcpy(o, row, static_cast<size_t>(n) * sizeof(T));
      } else {
        for (int64_t j = 0; j < n; ++j) o[j * st[0]] = row[j * st[1]];
      }
    } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {  // gather along the inner dim: one source row
      for (int64_t j = 0; j < n; ++j) o[j] = s[id[j] * src_dim_stride];
    } else {
      for (int64_t j = 0; j < n; ++j) o[j * st[0]] = s[j * st[1] + id[j * st[2]] * src_dim_stride];
    }
  });
}

// See Note [Index kernels]. The iteration runs over `shape` with `dim` moved innermost: targets that
// can coincide differ only in their coordinate along dim, so each row (the unit the threads split)
// holds every writer of its targets and no two threads write the same element.
template <class T, class F>
void scatter_loop(F f, T* dst, const Strides& dst_strides, int64_t dst_dim_stride, const T* src,
                  const Strides& src_strides, const int64_t* ids, const Strides& ids_strides, const Shape& shape,
                  size_t dim) {
  Shape ps;
  Strides pd, psrc, pid;
  auto push = [&](size_t d) {
    ps.push_back(shape[d]);
    pd.push_back(dst_strides[d]);
    psrc.push_back(src_strides[d]);
    pid.push_back(ids_strides[d]);
  };
  for (size_t d = 0; d < shape.size(); ++d)
    if (d != dim) push(d);
  push(dim);
  const Collapsed<3> c = collapse<3>(ps, {&pd, &psrc, &pid});
  for_each_row<3>(c, [&](const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& st) {
    T* o = dst + off[0];
    const T* s = src + off[1];
    const int64_t* id = ids + off[2];
    for (int64_t j = 0; j < n; ++j) {
      T& t = o[j * st[0] + id[j * st[2]] * dst_dim_stride];
      t = f(t, s[j * st[1]]);
    }
  });
}

// index_add: dst.select(dim, ids[i]) += src.select(dim, i). The threads split the positions of a
// slice and each runs over every i for its positions, so repeated ids never race, and the inner
// loop runs along a slice row (unit stride when the tensors are contiguous).
template <class T>
void index_add_loop(const TensorArg& dst, const TensorArg& src, size_t dim, const int64_t* ids, int64_t id_stride) {
  const int64_t n = src.layout.dim(dim);
  const int64_t dds = dst.layout.stride(dim), sds = src.layout.stride(dim);
  const Layout dl = dst.layout.select(dim, 0), sl = src.layout.select(dim, 0);
  const Collapsed<2> c = collapse<2>(sl.shape(), {&dl.strides(), &sl.strides()});
  const size_t rank = c.shape.size();
  const int64_t inner = c.shape[rank - 1];
  const int64_t sd = c.strides[0][rank - 1], ss = c.strides[1][rank - 1];
  T* const dp = static_cast<T*>(dst.data) + dl.offset();
  const T* const sp = static_cast<const T*>(src.data) + sl.offset();
  const AddWrap add;
  parallel_for(c.numel, std::max<int64_t>(1, kGrain / n), [&](int64_t b, int64_t e) {
    for (int64_t pos = b; pos < e;) {
      // the row segment [pos, pos + len) of the collapsed slice
      const int64_t col = pos % inner;
      const int64_t len = std::min(inner - col, e - pos);
      int64_t od = col * sd, os = col * ss;
      int64_t r = pos / inner;
      for (size_t k = rank - 1; k-- > 0;) {
        const int64_t ix = r % c.shape[k];
        r /= c.shape[k];
        od += ix * c.strides[0][k];
        os += ix * c.strides[1][k];
      }
      for (int64_t i = 0; i < n; ++i) {
        T* o = dp + od + ids[i * id_stride] * dds;
        const T* s = sp + os + i * sds;
        if (sd == 1 && ss == 1) {
          for (int64_t j = 0; j < len; ++j) o[j] = add(o[j], s[j]);
        } else {
          for (int64_t j = 0; j < len; ++j) o[j * sd] = add(o[j * sd], s[j * ss]);
        }
      }
      pos += len;
    }
  });
}

}  // namespace

void CpuBackend::index_select(const TensorArg& src, const TensorArg& ids, int dim, const TensorArg& dst) {
  const size_t d = static_cast<size_t>(dim);
  const Ids iv = validate_ids("index_select", ids, src.layout.dim(d), dim);
  if (dst.numel() == 0) return;
  const Strides ss = with_zero_at(src.layout.strides(), d);
  const Strides is = ids_along(dst.layout.rank(), d, iv.arg.layout.stride(0));
  dispatch_bits(dtype_size(src.dtype), [&]<class U>() {
    gather_loop<U>(dst, src.ptr<U>(), ss, src.layout.stride(d), iv.arg.ptr<int64_t>(), is);
  });
}

void CpuBackend::gather(const TensorArg& src, const TensorArg& ids, int dim, const TensorArg& dst) {
  const size_t d = static_cast<size_t>(dim);
  const Ids iv = validate_ids("gather", ids, src.layout.dim(d), dim);
  if (dst.numel() == 0) return;
  const Strides ss = with_zero_at(src.layout.strides(), d);
  dispatch_bits(dtype_size(src.dtype), [&]<class U>() {
    gather_loop<U>(dst, src.ptr<U>(), ss, src.layout.stride(d), iv.arg.ptr<int64_t>(), iv.arg.layout.strides());
  });
}

void CpuBackend::scatter(const TensorArg& dst, const TensorArg& ids, const TensorArg& src, int dim, bool add) {
  const size_t d = static_cast<size_t>(dim);
  const Ids iv = validate_ids(add ? "scatter_add" : "scatter", ids, dst.layout.dim(d), dim);
  if (ids.numel() == 0) return;
  const Strides ds = with_zero_at(dst.layout.strides(), d);
  if (add) {
    dispatch(dst.dtype, [&]<class T>() {
      scatter_loop<T>(AddWrap{}, dst.ptr<T>(), ds, dst.layout.stride(d), src.ptr<T>(), src.layout.strides(),
                      iv.arg.ptr<int64_t>(), iv.arg.layout.strides(), ids.shape(), d);
    });
  } else {
    dispatch_bits(dtype_size(dst.dtype), [&]<class U>() {
      scatter_loop<U>(Assign{}, dst.ptr<U>(), ds, dst.layout.stride(d), src.ptr<U>(), src.layout.strides(),
                      iv.arg.ptr<int64_t>(), iv.arg.layout.strides(), ids.shape(), d);
    });
  }
}

void CpuBackend::index_add(const TensorArg& dst, const TensorArg& ids, const TensorArg& src, int dim) {
  const size_t d = static_cast<size_t>(dim);
  const Ids iv = validate_ids("index_add", ids, dst.layout.dim(d), dim);
  if (src.numel() == 0) return;
  dispatch(dst.dtype,
           [&]<class T>() { index_add_loop<T>(dst, src, d, iv.arg.ptr<int64_t>(), iv.arg.layout.stride(0)); });
}

}  // namespace wick::cpu
