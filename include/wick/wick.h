// wick: tensors on the CPU, NVIDIA GPUs (CUDA) and AMD GPUs (ROCm).
//
// A short tour.
//
//   #include <wick/wick.h>
//   using namespace wick;
//
// Devices are values: Device::cpu(), Device::cuda(0), Device::rocm(0), or
// Device::gpu_if_available() to take a GPU when one is there. Each device has its own random
// generator (set_seed) and can be synchronised and queried (info(): name, architecture, memory).
// A GPU device is a handle with one stream; dev.new_stream() gives another handle of the same GPU
// with its own stream, and events order the work of handles that share tensors
// (Note [Device handles] in wick/device.h). t.to(dev) copies between any two devices or handles;
// t.to(dev, true) queues the copy without waiting for it.
//
// A Tensor is a dtype, a device and a strided view of a storage:
//
//   Tensor a = Tensor::rand_uniform({2, 3}, DType::F32, -1.0, 1.0, dev);
//   Tensor b = Tensor::arange(0, 3, 1, DType::F32, dev);     // [3]
//   Tensor c = a + b;                                         // broadcasts to [2, 3]
//   Tensor s = c.sum({1});                                    // [2]
//   std::vector<float> v = s.to_vector<float>();              // to the host
//
// Views never copy: a.t(), a.narrow(1, 0, 2), a.permute({1, 0}), a.select(0, 1),
// a.unsqueeze(0).broadcast_as({4, 2, 3}); every op accepts any strided layout, and contiguous()
// copies only when it has to. Ops return new contiguous tensors; const_set and copy_from write into
// a view in place.
//
// Element types (DType): U8, U32, I64, BF16, F16, F32, F64, F8E4M3; host scalar types wick::bf16,
// wick::f16, wick::f8e4m3 convert to and from float rounding to nearest even. Float ops on the 8- and
// 16-bit types compute in f32 and round once.
//
// Errors are exceptions derived from wick::Error, each naming the op, the shapes, dtypes and device:
//   [matmul] inner dims differ: [2, 3] f32 cpu @ [4, 5] f32 cpu
// Out-of-range indices raise IndexError before anything is written.
//
// Your own kernels (wick/kernel.h): compile_module(dev, "name", source) compiles CUDA / HIP C++ at
// run time (NVRTC / hipRTC), caches the module per device by name, and CustomOp launches one of
// its kernels on tensors, queued on the device's stream like every op.
//
// Model files (wick/io.h): GgufFile, SafetensorsFile, NpyFile / NpzFile open a file as a read-only
// mapping whose tensors are CPU views, or stream them to a GPU; GgufWriter, save_safetensors,
// save_npy / save_npz write them.
//
// Graphs (wick/graph.h): Graph::capture(dev, body) records a function's device work once (a CUDA /
// HIP graph on GPUs) and replay() runs it again with one launch, reading inputs changed in place.
//
// Language models (wick/llm.h): llm::Model::load(path, dev) reads a Llama-family model (Llama 2 / 3,
// Mistral, Qwen2, Qwen3) from a GGUF file or a Hugging Face folder with its tokenizer; generate()
// streams sampled text, forward() returns logits.
//
// The op table (wick/ops.h) lists every op and the dtypes it is defined for; `wick check` runs each
// of them on every device present against a reference.
#pragma once

#include "wick/device.h"
#include "wick/dlpack.h"
#include "wick/dtype.h"
#include "wick/error.h"
#include "wick/graph.h"
#include "wick/io.h"
#include "wick/kernel.h"
#include "wick/layout.h"
#include "wick/llm.h"
#include "wick/ops.h"
#include "wick/qformat.h"
#include "wick/quant.h"
#include "wick/shape.h"
#include "wick/tensor.h"
#include "wick/version.h"
