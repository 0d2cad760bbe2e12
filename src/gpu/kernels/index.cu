// Indexing on the GPU: index_select, gather (here), scatter / scatter_add / index_add
// (index_scatter.cu), and the id check they share.
//
// Note [GPU index kernels]
// The CPU's reduction (Note [Index kernels] in src/cpu/index.cpp): a strided loop over an iteration
// shape with operands dst, src and ids (read in their own dtype), the indexed operand carrying
// stride 0 at `dim` and the id supplying that coordinate. Scatters check ids before anything is
// written: a check kernel records the smallest row-major position of an out-of-range id
// (atomicMin), the host reads it back and throws the CPU's IndexError for that id; only then are
// the writes queued. index_select and gather write a fresh tensor their front end drops when they
// throw. gather checks in its own kernel (a bad id raises a flag and writes a zero; the check
// kernel then names it), not in a second pass over the ids. index_select of rows posts the check
// from the gather's first blocks, which copy nothing, to pinned host memory (IdPost, PinnedSlots):
// the host waits for the kernel's start, not its end, and the next op's launch overlaps the gather.
// The ids stay alive and unchanged until the op returns, after the check.
//
// Gathers move bits, so they instantiate per element size; where rows are contiguous and aligned
// they move 4, 8 or 16 bytes per thread (widen() below).
#include <cstring>
#include <string>

#include "backend/dispatch.h"
#include "gpu/gpu_backend.h"
#include "gpu/kernels/index.cuh"
#include "gpu/kernels/rows.cuh"
#include "gpu/kernels/scratch.h"

namespace wick::WICK_GPU_NS {

namespace kern {

namespace {

__global__ void set_flag_kernel(unsigned long long* flag, unsigned long long value) { *flag = value; }

template <class I>
__device__ __forceinline__ bool id_in_range(I v, uint64_t size) {
  if constexpr (std::is_unsigned_v<I>) {
    return static_cast<uint64_t>(v) < size;
  } else {
    return v >= 0 && static_cast<uint64_t>(v) < size;
  }
}

template <class I, class Index>
__global__ void __launch_bounds__(kBlock) check_ids_kernel(Meta<Index, 1> m, Index n, int64_t base, const I* ids,
                                                           uint64_t size, unsigned long long* first_bad) {
  const Index step = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    Index off[1];
    offsets_of(m, i, off);
    if (!id_in_range(ids[off[0]], size))
      atomicMin(first_bad, static_cast<unsigned long long>(base + static_cast<int64_t>(i)));
  }
}

// The id check that index_select's gather runs in blocks of its own, the grid's first (Note [GPU
// index kernels]): block b < blocks checks ids [b * per, (b + 1) * per) of the n ids (1-D, stride
// `stride`) and writes the least position of an out-of-range one among them, or n, to slots[b]
// (pinned host memory). blocks == 0: no check.
template <class I>
struct PostedCheck {
  const I* ids = nullptr;
  int64_t n = 0, stride = 0, per = 0;
  uint64_t size = 0;
  unsigned long long* slots = nullptr;
  unsigned blocks = 0;
};

template <class I>
__device__ __forceinline__ void posted_check(const PostedCheck<I>& c) {
  __shared__ unsigned long long least;
  const unsigned long long none = static_cast<unsigned long long>(c.n);
  if (threadIdx.x == 0) least = none;
  __syncthreads();
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * c.per, end = min(c.n, begin + c.per);
  unsigned long long mine = none;  // no side effect in the loop: its loads can all be in flight
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    if (!id_in_range(c.ids[i * c.stride], c.size) && static_cast<unsigned long long>(i) < mine)
      mine = static_cast<unsigned long long>(i);
  if (mine != none) atomicMin(&least, mine);
  __syncthreads();
  if (threadIdx.x == 0) {
    *static_cast<volatile unsigned long long*>(c.slots + blockIdx.x) = least;
    __threadfence_system();  // on its way to the host now, not at the kernel's end
  }
}

// The block's place among the gather's working blocks (`block` of `blocks`). With kPosted the
// grid's first c.blocks blocks run the posted check instead, and this returns false for them.
template <bool kPosted, class I>
__device__ __forceinline__ bool working_block(const PostedCheck<I>& c, unsigned& block, unsigned& blocks) {
  block = blockIdx.x;
  blocks = gridDim.x;
  if constexpr (kPosted) {
    if (block < c.blocks) {
      posted_check(c);
      return false;
    }
    block -= c.blocks;
    blocks -= c.blocks;
  }
  return true;
}

// The posted check for a launch (its blocks come on top of the launch's grid): the gather's first
// launch takes it, later ones (and gathers without one) get none.
template <class I>
PostedCheck<I> take_check(IdPost* post, uint64_t size) {
  PostedCheck<I> c;
  if (post == nullptr || post->taken) return c;
  post->taken = true;
  c.ids = post->ids->ptr<I>();
  c.n = post->ids->numel();
  c.stride = post->ids->layout.stride(0);
  c.blocks = static_cast<unsigned>(post->count);
  c.per = (c.n + c.blocks - 1) / c.blocks;
  c.size = size;
  c.slots = post->slots;
  return c;
}

// Out-of-range ids write a zero and raise *bad, or with kPosted the kernel runs the posted check
// first instead (Note [GPU index kernels]).
template <class U, class I, class Index, bool kPosted>
__global__ void __launch_bounds__(kBlock)
    gather_kernel(Meta<Index, 3> m, Index n, U* out, const U* src, const I* ids, int64_t src_dim_stride, uint64_t size,
                  unsigned long long* bad, PostedCheck<I> check) {
  unsigned block, blocks;
  if (!working_block<kPosted>(check, block, blocks)) return;
  const Index step = static_cast<Index>(blockDim.x) * blocks;
  for (Index i = static_cast<Index>(block) * blockDim.x + threadIdx.x; i < n; i += step) {
    Index off[3];
    offsets_of(m, i, off);
    const I id = ids[off[2]];
    if (id_in_range(id, size)) {
      out[off[0]] = src[static_cast<int64_t>(off[1]) + static_cast<int64_t>(id) * src_dim_stride];
    } else {
      if constexpr (!kPosted) *bad = 1;
      out[off[0]] = U{};
    }
  }
}

// Note [GPU gather rows]
// A gather along a unit-stride last dim whose ids pick at random from the whole row reads every
// source element through a 32-byte L2 sector, far below the copy bandwidth. When the source row
// fits in shared memory, a block per row copies it there with 16-byte loads (read once, coalesced)
// and then serves the ids from shared memory, the ids and dst streamed in order.
constexpr int kRowThreads = 1024;

// dst[k] = src[k] for k < n by the block's threads (thread t takes k = t, t + nt, ...), each keeping
// four loads in flight.
template <class V>
__device__ __forceinline__ void block_copy(V* dst, const V* __restrict__ src, int64_t n) {
  const int t = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  int64_t k = t;
  for (; k + 3 * nt < n; k += 4 * nt) {
    const V v0 = src[k], v1 = src[k + nt], v2 = src[k + 2 * nt], v3 = src[k + 3 * nt];
    dst[k] = v0;
    dst[k + nt] = v1;
    dst[k + 2 * nt] = v2;
    dst[k + 3 * nt] = v3;
  }
  for (; k < n; k += nt) dst[k] = src[k];
}

// Copies src[0, len) into shared memory at `smem` + (src's address mod 16) bytes, so that the 16-byte
// aligned part of the row lands on 16-byte aligned shared words; returns where the row starts.
template <class U>
__device__ __forceinline__ U* stage_row(unsigned char* smem, const U* __restrict__ src, int64_t len) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(src);
  U* row = reinterpret_cast<U*>(smem + a % 16);
  const int t = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  const int64_t head = std::min<int64_t>(len, static_cast<int64_t>((16 - a % 16) % 16 / sizeof(U)));
  const int64_t vecs = (len - head) * static_cast<int64_t>(sizeof(U)) / 16;
  const int64_t tail = head + vecs * 16 / static_cast<int64_t>(sizeof(U));
  block_copy(reinterpret_cast<uint4*>(row + head), reinterpret_cast<const uint4*>(src + head), vecs);
  for (int64_t i = t; i < head; i += nt) row[i] = src[i];
  for (int64_t i = tail + t; i < len; i += nt) row[i] = src[i];
  return row;
}

// Row r of the iteration: out[j * os] = src row[ids[j * is]] for j < cols, the source row (len
// elements, unit stride) staged in shared memory. Out-of-range ids write a zero and raise *bad (or
// kPosted: as gather_kernel).
template <class U, class I, bool kPosted>
__global__ void __launch_bounds__(kRowThreads)
    gather_rows_kernel(RowMeta<3> m, int64_t rows, int64_t cols, U* out, int64_t os, const U* __restrict__ src,
                       int64_t len, const I* __restrict__ ids, int64_t is, unsigned long long* bad,
                       PostedCheck<I> check) {
  unsigned block, blocks;
  if (!working_block<kPosted>(check, block, blocks)) return;
  extern __shared__ uint4 smem_words[];
  auto* smem = reinterpret_cast<unsigned char*>(smem_words);
  const int t = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  for (int64_t r = block; r < rows; r += blocks) {
    int64_t off[3];
    row_offsets(m, r, off);
    __syncthreads();  // the previous row's lookups are done
    const U* row = stage_row(smem, src + off[1], len);
    __syncthreads();
    U* o = out + off[0];
    const I* id = ids + off[2];
    const uint64_t size = static_cast<uint64_t>(len);
    int64_t j = t;
    for (; j + 3 * nt < cols; j += 4 * nt) {  // four ids in flight per thread
      I v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) v[u] = id[(j + u * nt) * is];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const bool ok = id_in_range(v[u], size);
        if (!kPosted && !ok) *bad = 1;
        o[(j + u * nt) * os] = ok ? row[static_cast<int64_t>(v[u])] : U{};
      }
    }
    for (; j < cols; j += nt) {
      const I v = id[j * is];
      const bool ok = id_in_range(v, size);
      if (!kPosted && !ok) *bad = 1;
      o[j * os] = ok ? row[static_cast<int64_t>(v)] : U{};
    }
  }
}

// Note [GPU gather runs]
// index_select of rows (an embedding lookup) moves whole contiguous runs with one id each. The
// flat kernel spends a thread, a division chain and an id load per 16 bytes, well short of the
// copy bandwidth; here a block copies a run, finding its offsets and id once, each thread keeping
// four 16-byte loads in flight.
constexpr int kRunThreads = 128;

// Out-of-range ids write zeros and raise *bad (or kPosted: as gather_kernel).
template <class U, class I, bool kPosted>
__global__ void __launch_bounds__(kRunThreads)
    gather_runs_kernel(RowMeta<3> m, int64_t runs, int64_t len, U* out, const U* __restrict__ src,
                       const I* __restrict__ ids, int64_t src_dim_stride, uint64_t size, unsigned long long* bad,
                       PostedCheck<I> check) {
  unsigned block, blocks;
  if (!working_block<kPosted>(check, block, blocks)) return;
  const int t = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  for (int64_t r = block; r < runs; r += blocks) {
    int64_t off[3];
    row_offsets(m, r, off);
    const I id = ids[off[2]];
    U* o = out + off[0];
    if (!id_in_range(id, size)) {
      if (!kPosted && t == 0) *bad = 1;
      for (int64_t k = t; k < len; k += nt) o[k] = U{};
      continue;
    }
    block_copy(o, src + off[1] + static_cast<int64_t>(id) * src_dim_stride, len);
  }
}

// Whether the gather can move `width` bytes (k = width / elem elements) per thread: the innermost
// dim is a contiguous row of dst and src with one id (widen_inner), the dim stride is a multiple
// of k too, and both base pointers are aligned to `width`. Then the plan is rewritten in units of
// k elements.
bool widen(Plan<3>& p, int64_t* src_dim_stride, size_t elem, size_t width, const void* out, const void* src) {
  const int64_t k = static_cast<int64_t>(width / elem);
  if (*src_dim_stride % k != 0 || !aligned_to(out, width) || !aligned_to(src, width) || !widen_inner(p, k, 0b011u))
    return false;
  *src_dim_stride /= k;
  return true;
}

template <class U, class I>
void gather_launch(const LaunchCtx& ctx, const Plan<3>& p, U* out, const U* src, const I* ids, int64_t sds,
                   uint64_t size, unsigned long long* bad, IdPost* post) {
  const int r = p.rank() - 1;
  if (p.strides[0][r] == 1 && p.strides[1][r] == 1 && p.strides[2][r] == 0 && p.shape[r] >= kRunThreads / 2) {
    // Contiguous runs with one id each (Note [GPU gather runs]).
    const Shape shape(p.shape.begin(), p.shape.end());
    std::array<Strides, 3> st;
    for (int k = 0; k < 3; ++k)
      for (int d = 0; d <= r; ++d) st[k].push_back(p.strides[k][d]);
    for_each_row_slice<3>(
        shape, {&st[0], &st[1], &st[2]}, [&](const RowMeta<3>& m, int64_t runs, const std::array<int64_t, 3>& base) {
          const PostedCheck<I> check = take_check<I>(post, size);
          by_flag(post != nullptr, [&]<bool kPosted>() {
            gpu::launch<gather_runs_kernel<U, I, kPosted>>(ctx, row_grid(runs) + check.blocks, kRunThreads, 0, m, runs,
                                                           p.shape[r], out + base[0], src + base[1], ids + base[2], sds,
                                                           size, bad, check);
          });
        });
    return;
  }
  for_each_launch<3>(p, true, [&]<class Index>(int first, const std::array<int64_t, 3>& off, int64_t) {
    const int64_t n = p.numel_from(first);
    const PostedCheck<I> check = take_check<I>(post, size);
    const unsigned grid = std::min(flat_grid(n), static_cast<unsigned>(INT32_MAX) - check.blocks) + check.blocks;
    by_flag(post != nullptr, [&]<bool kPosted>() {
      gpu::launch<gather_kernel<U, I, Index, kPosted>>(ctx, grid, kBlock, 0, make_meta<Index, 3>(p, first),
                                                       static_cast<Index>(n), out + off[0], src + off[1], ids + off[2],
                                                       sds, size, bad, check);
    });
  });
}

// Runs the gather as gather_rows_kernel when it qualifies (Note [GPU gather rows]): the gathered
// dim is the last, unit-stride in src, its row fits in shared memory and is not much longer than
// the dst row (each source element is staged once per row), and there are rows enough to fill the
// device. Returns whether it did.
bool gather_rows(const LaunchCtx& ctx, const TensorArg& dst, const TensorArg& src, const Strides& src_strides,
                 int64_t src_dim_stride, int64_t len, const TensorArg& ids, const Strides& ids_strides, int dim,
                 unsigned long long* bad, IdPost* post) {
  const int rank = static_cast<int>(dst.layout.rank());
  if (dim != rank - 1 || src_dim_stride != 1 || len < 1) return false;
  const int64_t cols = dst.shape().back(), rows = dst.numel() / cols;
  const int64_t elem = static_cast<int64_t>(dtype_size(dst.dtype));
  const int64_t bytes = len * elem + 16;
  // The posted check's one word of static shared memory counts against the limit too.
  if (bytes + 8 > ctx.shared_per_block || len > 4 * cols || rows < ctx.multiprocessors) return false;
  const int64_t os = dst.layout.strides().back(), is = ids_strides.back();
  bool done = false;
  wick::dispatch_in<kIdTypes>(
      ids.dtype,
      [&]<class I>() {
        by_size(elem, [&]<class U>() {
          by_flag(post != nullptr, [&]<bool kPosted>() {
            constexpr auto kernel = gather_rows_kernel<U, I, kPosted>;
            gpu::allow_dynamic_shared<kernel>(bytes, ctx.op, ctx.device);
            for_each_row_slice<3>(dst.shape(), {&dst.layout.strides(), &src_strides, &ids_strides},
                                  [&](const RowMeta<3>& m, int64_t n, const std::array<int64_t, 3>& base) {
                                    const PostedCheck<I> check = take_check<I>(post, static_cast<uint64_t>(len));
                                    gpu::launch<kernel>(ctx, row_grid(n) + check.blocks, kRowThreads,
                                                        static_cast<size_t>(bytes), m, n, cols, dst.ptr<U>() + base[0],
                                                        os, src.ptr<U>() + base[1], len, ids.ptr<I>() + base[2], is,
                                                        bad, check);
                                  });
          });
          done = true;
        });
      },
      ctx.op);
  return done;
}

}  // namespace

void set_flag(const LaunchCtx& ctx, unsigned long long* flag, unsigned long long value) {
  gpu::launch<set_flag_kernel>(ctx, 1, 1, 0, flag, value);
}

void check_ids(const LaunchCtx& ctx, const TensorArg& ids, int64_t size, unsigned long long* first_bad) {
  if (ids.numel() == 0) return;
  const Plan<1> p = collapse<1>(ids.shape(), {&ids.layout.strides()});
  wick::dispatch_in<kIdTypes>(
      ids.dtype,
      [&]<class I>() {
        const I* base = ids.ptr<I>();
        for_each_launch<1>(p, true, [&]<class Index>(int first, const std::array<int64_t, 1>& off, int64_t pos) {
          const int64_t n = p.numel_from(first);
          gpu::launch<check_ids_kernel<I, Index>>(ctx, grid_for(ctx, n), kBlock, 0, make_meta<Index, 1>(p, first),
                                                  static_cast<Index>(n), pos, base + off[0],
                                                  static_cast<uint64_t>(size), first_bad);
        });
      },
      ctx.op);
}

void gather(const LaunchCtx& ctx, const TensorArg& dst, const TensorArg& src, const Strides& src_strides,
            int64_t src_dim_stride, int64_t size, const TensorArg& ids, const Strides& ids_strides, int dim,
            unsigned long long* bad, IdPost* post) {
  if (dst.numel() == 0) return;
  const size_t elem = dtype_size(dst.dtype);
  if (gather_rows(ctx, dst, src, src_strides, src_dim_stride, size, ids, ids_strides, dim, bad, post)) return;
  Plan<3> p = collapse<3>(dst.shape(), {&dst.layout.strides(), &src_strides, &ids_strides});
  size_t width = elem;
  for (size_t w = 16; w > elem; w /= 2) {
    if (widen(p, &src_dim_stride, elem, w,
              static_cast<const char*>(dst.data) + dst.layout.offset() * static_cast<int64_t>(elem),
              static_cast<const char*>(src.data) + src.layout.offset() * static_cast<int64_t>(elem))) {
      width = w;
      break;
    }
  }
  wick::dispatch_in<kIdTypes>(
      ids.dtype,
      [&]<class I>() {
        by_size<16>(static_cast<int64_t>(width), [&]<class U>() {
          U* const o =
              reinterpret_cast<U*>(static_cast<char*>(dst.data) + dst.layout.offset() * static_cast<int64_t>(elem));
          const U* const s = reinterpret_cast<const U*>(static_cast<const char*>(src.data) +
                                                        src.layout.offset() * static_cast<int64_t>(elem));
          gather_launch<U, I>(ctx, p, o, s, ids.ptr<I>(), src_dim_stride, static_cast<uint64_t>(size), bad, post);
        });
      },
      ctx.op);
}

}  // namespace kern

namespace {

using indexing::ids_along;
using indexing::with_zero_at;

// The id at row-major position `pos` of ids, read from the device.
int64_t id_at(GpuBackend& b, const TensorArg& ids, int64_t pos) {
  const int64_t off = ids.layout.offset() + indexing::offset_of_position(ids.layout, pos);
  return wick::dispatch_in<kern::kIdTypes>(ids.dtype, [&]<class I>() {
    I v{};
    b.copy_to_host(&v, static_cast<const I*>(ids.data) + off, sizeof(I));
    return static_cast<int64_t>(v);
  });
}

// checked_gather checks the ids before the gather when dst has at least this many elements per id
// (index_select); with more ids the check runs inside the gather (Note [GPU index kernels]).
constexpr int64_t kIdsFirstRatio = 8;

// Whether ids of this dtype can hold a value outside [0, size) at all (else they need no check).
bool can_be_bad(const TensorArg& ids, int64_t size) {
  if (ids.numel() == 0) return false;
  if (ids.dtype == DType::U8 && size > 0xff) return false;
  if (ids.dtype == DType::U32 && size > 0xffffffffLL) return false;
  return true;
}

// Throws the CPU's IndexError naming the id at row-major position `first` when there is one.
void throw_if_bad(GpuBackend& b, const kern::LaunchCtx& ctx, const TensorArg& ids, unsigned long long first,
                  int64_t size, int dim) {
  if (first >= static_cast<unsigned long long>(ids.numel())) return;
  const int64_t value = id_at(b, ids, static_cast<int64_t>(first));
  throw indexing::out_of_range(ctx.op, value, dim, size, std::string(kBackendName) + ":" + std::to_string(b.ordinal()));
}

// Checks every id against [0, size) (Note [GPU index kernels]); throws the CPU's IndexError naming
// the first offending id in row-major order.
void validate_ids(GpuBackend& b, const kern::LaunchCtx& ctx, const TensorArg& ids, int64_t size, int dim) {
  if (!can_be_bad(ids, size)) return;
  kern::Scratch flag(b, sizeof(unsigned long long));
  auto* first_bad = static_cast<unsigned long long*>(flag.get());
  kern::set_flag(ctx, first_bad, static_cast<unsigned long long>(ids.numel()));
  kern::check_ids(ctx, ids, size, first_bad);
  unsigned long long first = 0;
  b.copy_to_host(&first, first_bad, sizeof first);
  throw_if_bad(b, ctx, ids, first, size, dim);
}

// The gather with its id check (Note [GPU index kernels]); throws IndexError naming the first bad
// id, after which the front end drops the output.
void checked_gather(GpuBackend& b, const kern::LaunchCtx& ctx, const TensorArg& src, const TensorArg& ids, int dim,
                    const TensorArg& dst, const Strides& ids_strides) {
  const size_t d = static_cast<size_t>(dim);
  const int64_t size = src.layout.dim(d);
  if (dst.numel() == 0) return validate_ids(b, ctx, ids, size, dim);  // ids are checked all the same
  const auto run_gather = [&](unsigned long long* raised, kern::IdPost* post) {
    kern::gather(ctx, dst, src, with_zero_at(src.layout.strides(), d), src.layout.stride(d), size, ids, ids_strides,
                 dim, raised, post);
  };
  if (!can_be_bad(ids, size)) return run_gather(nullptr, nullptr);  // no id can be out of range: no flag
  if (ids.layout.rank() == 1 && ids.numel() * kIdsFirstRatio <= dst.numel()) {
    // Few ids for the data moved: the gather's first blocks check them and post the result to
    // pinned host memory, which the host reads while the gather goes on.
    kern::IdPost post{&ids, nullptr, kern::posted_slots(ids.numel())};
    PinnedSlots slots(b, post.count);
    post.slots = slots.data();
    run_gather(nullptr, &post);
    return throw_if_bad(b, ctx, ids, slots.wait_least(ctx.op), size, dim);
  }
  kern::Scratch raised_flag(b, sizeof(unsigned long long));
  auto* raised = static_cast<unsigned long long*>(raised_flag.get());
  kern::set_flag(ctx, raised, 0);
  run_gather(raised, nullptr);
  unsigned long long flag = 0;
  b.copy_to_host(&flag, raised, sizeof flag);
  if (flag == 0) return;
  validate_ids(b, ctx, ids, size, dim);  // throws, naming the first bad id
  throw IndexError(std::string("[") + ctx.op + "] an index out of range for dim " + std::to_string(dim) + " of size " +
                   std::to_string(size) + " (" + kBackendName + ":" + std::to_string(b.ordinal()) + ")");
}

}  // namespace

void kern::index_select(const kern::LaunchCtx& base, const TensorArg& src, const TensorArg& ids, int dim,
                        const TensorArg& dst) {
  checked_gather(*base.backend, base.with_op("index_select"), src, ids, dim, dst,
                 ids_along(dst.layout.rank(), static_cast<size_t>(dim), ids.layout.stride(0)));
}

void kern::gather(const kern::LaunchCtx& base, const TensorArg& src, const TensorArg& ids, int dim,
                  const TensorArg& dst) {
  checked_gather(*base.backend, base.with_op("gather"), src, ids, dim, dst, ids.layout.strides());
}

void kern::scatter(const kern::LaunchCtx& base, const TensorArg& dst, const TensorArg& ids, const TensorArg& src,
                   int dim, bool add) {
  const kern::LaunchCtx ctx = base.with_op(add ? "scatter_add" : "scatter");
  const size_t d = static_cast<size_t>(dim);
  validate_ids(*base.backend, ctx, ids, dst.layout.dim(d), dim);
  kern::scatter(ctx, dst, with_zero_at(dst.layout.strides(), d), dst.layout.stride(d), src, src.layout.strides(), ids,
                ids.layout.strides(), ids.shape(), add);
}

// index_add is a scatter_add over src's shape whose ids are 1-D along dim.
void kern::index_add(const kern::LaunchCtx& base, const TensorArg& dst, const TensorArg& ids, const TensorArg& src,
                     int dim) {
  const kern::LaunchCtx ctx = base.with_op("index_add");
  const size_t d = static_cast<size_t>(dim);
  validate_ids(*base.backend, ctx, ids, dst.layout.dim(d), dim);
  kern::scatter(ctx, dst, with_zero_at(dst.layout.strides(), d), dst.layout.stride(d), src, src.layout.strides(), ids,
                ids_along(src.layout.rank(), d, ids.layout.stride(0)), src.shape(), true);
}

}  // namespace wick::WICK_GPU_NS
