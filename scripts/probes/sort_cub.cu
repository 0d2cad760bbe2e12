// How fast can the vendor's own sorts do wick bench's sort row (4096 rows of 32768 f32, each row
// sorted with its indices)? CUB's segmented sorts on the same rows, its one-sweep radix sort of all
// the keys as one array (with and without values), and a device copy of the row's bytes (input
// read, values and i64 indices written). Build and run on the GPU machine:
//   nvcc -std=c++17 -O2 -arch=sm_90 -o /tmp/sort_cub scripts/probes/sort_cub.cu && /tmp/sort_cub
// Prints the median ms of 10 runs after 2 warm-ups; the values CUB carries are i32 positions in
// the row (filled once, outside the timing), half the width of wick's i64 indices. Session 24, H100
// (CUDA 13's CUB), with wick's sort of the same shape (scripts/probes/sort_shapes.cpp) in the same
// command: copy 2938 GB/s, the row's floor 0.731 ms; DeviceSegmentedSort 8.30 ms (9% of the
// floor's rate), DeviceSegmentedRadixSort 7.86 (9%), one-array SortPairs 4.62 (16%), one-array
// SortKeys, keys alone, 2.92 (25%); wick 2.88 (25%), with values and i64 indices.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cub/cub.cuh>
#include <vector>

namespace {

__global__ void fill(float* x, int* pos, int* offsets, long long n, int cols, int rows) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u;  // a hash, uniform enough for timing
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    x[i] = static_cast<float>(h) * (2.0f / 4294967296.0f) - 1.0f;
    pos[i] = static_cast<int>(i % cols);
    if (i <= rows) offsets[i] = static_cast<int>(i) * cols;
  }
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::printf("%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

template <class F>
double median_ms(F&& f) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<double> t;
  for (int r = 0; r < 12; ++r) {
    cudaEventRecord(a);
    f();
    cudaEventRecord(b);
    check(cudaEventSynchronize(b), "run");
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    if (r >= 2) t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
  const int rows = 4096, cols = 32768;
  const long long n = static_cast<long long>(rows) * cols;
  float *keys, *keys_out;
  int *pos, *pos_out, *offsets;
  check(cudaMalloc(&keys, n * 4), "malloc");
  check(cudaMalloc(&keys_out, n * 4), "malloc");
  check(cudaMalloc(&pos, n * 4), "malloc");
  check(cudaMalloc(&pos_out, n * 8), "malloc");  // room for the copy's i64 indices
  check(cudaMalloc(&offsets, (rows + 1) * 4), "malloc");
  fill<<<1024, 256>>>(keys, pos, offsets, n, cols, rows);
  check(cudaDeviceSynchronize(), "fill");

  size_t bytes = 0, most = 0;
  cub::DeviceSegmentedSort::SortPairs(nullptr, bytes, keys, keys_out, pos, pos_out, n, rows, offsets, offsets + 1);
  most = std::max(most, bytes);
  cub::DeviceSegmentedRadixSort::SortPairs(nullptr, bytes, keys, keys_out, pos, pos_out, n, rows, offsets, offsets + 1);
  most = std::max(most, bytes);
  cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, keys_out, pos, pos_out, n);
  most = std::max(most, bytes);
  cub::DeviceRadixSort::SortKeys(nullptr, bytes, keys, keys_out, n);
  most = std::max(most, bytes);
  void* temp = nullptr;
  check(cudaMalloc(&temp, most), "malloc temp");

  const double copy = median_ms([&] { cudaMemcpyAsync(pos_out, keys, n * 4, cudaMemcpyDeviceToDevice); });
  const double floor_ms = copy * 2;  // 4n bytes read, 12n written (values, i64 indices): two copies' 8n each
  std::printf("copy of the input (4 bytes an element)     %.4f ms, %.0f GB/s; the row's floor 16 bytes: %.4f ms\n",
              copy, 2.0 * n * 4 / copy / 1e6, floor_ms);
  const auto line = [&](const char* name, double ms) {
    std::printf("%-42s %.4f ms (floor / ms = %.0f%%)\n", name, ms, 100.0 * floor_ms / ms);
  };
  line("cub DeviceSegmentedSort::SortPairs", median_ms([&] {
         size_t b = most;
         cub::DeviceSegmentedSort::SortPairs(temp, b, keys, keys_out, pos, pos_out, n, rows, offsets, offsets + 1);
       }));
  line("cub DeviceSegmentedRadixSort::SortPairs", median_ms([&] {
         size_t b = most;
         cub::DeviceSegmentedRadixSort::SortPairs(temp, b, keys, keys_out, pos, pos_out, n, rows, offsets, offsets + 1);
       }));
  line("cub DeviceRadixSort::SortPairs, one array", median_ms([&] {
         size_t b = most;
         cub::DeviceRadixSort::SortPairs(temp, b, keys, keys_out, pos, pos_out, n);
       }));
  line("cub DeviceRadixSort::SortKeys, one array", median_ms([&] {
         size_t b = most;
         cub::DeviceRadixSort::SortKeys(temp, b, keys, keys_out, n);
       }));
  check(cudaGetLastError(), "sorts");
  return 0;
}
