// What pdx's oneDNN handlers share (conv_matmul.cc: convolutions and matmuls;
// attention.cc, paged_attention.cc: attention): the engine, per-thread buffers, running
// parts of a call on XLA's own threads, and a vectorizable exp.

#ifndef PDX_KERNELS_ONEDNN_H_
#define PDX_KERNELS_ONEDNN_H_

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "dnnl.hpp"
#include "xla/ffi/api/ffi.h"

namespace pdx_dnnl {

namespace ffi = xla::ffi;

// Process-lifetime objects are never destroyed: at exit, XLA's threads may still be
// running, and static destructors would tear the engine and primitives from under them.
inline dnnl::engine& Engine() {
  static auto* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

// Per-thread working memory that grows and is kept: a fresh allocation per call would
// fault its pages in again every call (XLA's threads allocate from arenas that give
// freed memory back to the system). kScratch is a primitive's scratchpad; kWeights the
// weight copies a call shares with its parts (the calling thread waits for them);
// kPartOutput / kPartResidual a channel part's dense output and residual; kLogits /
// kLogitGrads an attention tile's probabilities and their gradient.
enum Slot { kScratch, kWeights, kScaled, kPartOutput, kPartResidual, kLogits, kLogitGrads, kSlots };

// The first 64-byte boundary at or after p (buffers are allocated 64 bytes larger).
inline uint8_t* Aligned(uint8_t* p) {
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t{63});
}

// This thread's oneDNN stream (created once: a stream per call costs microseconds).
inline dnnl::stream& ThreadStream() {
  thread_local dnnl::stream stream(Engine());
  return stream;
}

inline uint8_t* ThreadBuffer(Slot slot, size_t n) {
  struct Buffer {
    std::unique_ptr<uint8_t[]> data;
    size_t size = 0;
  };
  thread_local Buffer buffers[kSlots];
  Buffer& b = buffers[slot];
  if (n > b.size) {
    b.data.reset(new uint8_t[n + 64]);
    b.size = n;
  }
  return b.data ? Aligned(b.data.get()) : nullptr;
}

// Runs fn(0) .. fn(count - 1) on XLA's own threads (at most `workers` of them, the
// calling thread included), each part single-threaded: oneDNN's OpenMP team would
// compete with XLA's threads for the same cores. Parts are claimed from a counter, so
// uneven parts balance, the calling thread does every part itself when the pool is busy,
// and a call never waits on work that has not started.
struct Parts {
  int64_t count;
  std::function<void(int64_t)> run;
  std::atomic<int64_t> next{0}, done{0};
  std::mutex mutex;
  std::condition_variable finished;
  std::string error;

  void Work() {
    omp_set_num_threads(1);
    for (int64_t i; (i = next.fetch_add(1)) < count;) {
      try {
        run(i);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex);
        error = e.what();
      }
      if (done.fetch_add(1) + 1 == count) {
        std::lock_guard<std::mutex> lock(mutex);
        finished.notify_all();
      }
    }
  }
};

inline void ParallelFor(ffi::ThreadPool& pool, int64_t count, std::function<void(int64_t)> fn,
                        int64_t workers = INT64_MAX) {
  auto parts = std::make_shared<Parts>();
  parts->count = count;
  parts->run = std::move(fn);
  for (int64_t i = 1; i < std::min(count, workers); ++i) pool.Schedule([parts] { parts->Work(); });
  parts->Work();
  // Spin up to 200 us for the other parts before sleeping: waking a sleeping thread costs
  // tens of microseconds, and a batch-1 convolution's parts take about a hundred.
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
  while (parts->done.load() != parts->count && std::chrono::steady_clock::now() < until) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  std::unique_lock<std::mutex> lock(parts->mutex);
  parts->finished.wait(lock, [&] { return parts->done.load() == parts->count; });
  if (!parts->error.empty()) throw std::runtime_error(parts->error);
}

// The plan `make(g)` returns, made once per geometry `g` and kept for the process (one cache
// per call site: `make` is a lambda of its own type); safe to call from XLA's threads.
template <typename Plan, typename Geometry, typename Make>
const Plan& Cached(const Geometry& g, Make make) {
  static auto* mutex = new std::mutex;
  static auto* plans = new std::map<Geometry, std::unique_ptr<Plan>>;
  std::lock_guard<std::mutex> lock(*mutex);
  auto& slot = (*plans)[g];
  if (!slot) slot = std::make_unique<Plan>(make(g));
  return *slot;
}

// exp(x) for x <= 0 in arithmetic the compiler vectorizes: 2^n * e^r with
// n = round(x / ln 2), |r| <= ln(2) / 2, e^r by its degree-6 Taylor polynomial
// (relative error < 3e-7). Below -87 it returns exp(-87) ~ 1.6e-38 instead of a denormal.
inline float Exp(float x) {
  x = std::max(x, -87.0f);
  const float shifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (x * 1.44269504f + shifter) - shifter;
  const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f;  // ln 2 in two parts
  float p = 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  return p * scale;
}

// Logits -> probabilities over the first `visible` of `keys` entries (the rest 0), in place;
// returns the log-sum-exp (attention.cc).
float SoftmaxRow(float* s, int64_t visible, int64_t keys);

// A handler binding with n (>= 1) more float32 buffer operands / results. Bindings are
// neither copied nor moved: each step returns a new one.
template <int n, typename Binding>
auto F32Args(Binding&& binding) {
  if constexpr (n == 1) {
    return std::move(binding).template Arg<ffi::Buffer<ffi::F32>>();
  } else {
    return F32Args<n - 1>(std::move(binding).template Arg<ffi::Buffer<ffi::F32>>());
  }
}

template <int n, typename Binding>
auto F32Rets(Binding&& binding) {
  if constexpr (n == 1) {
    return std::move(binding).template Ret<ffi::Buffer<ffi::F32>>();
  } else {
    return F32Rets<n - 1>(std::move(binding).template Ret<ffi::Buffer<ffi::F32>>());
  }
}

}  // namespace pdx_dnnl

#endif  // PDX_KERNELS_ONEDNN_H_
