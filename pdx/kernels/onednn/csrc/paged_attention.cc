// Attention of the newest T tokens of each sequence over a paged KV cache that is only read, on CPU,
// called from XLA:CPU as a typed FFI custom call:
//
//   PdxPagedAttention(q [B,T,Hq,D] f32, k [B,T,Hk,D], v [B,T,Hk,D],     the T new tokens
//                     k_pages [N,P,Hk,D], v_pages [N,P,Hk,D],            the pool (N blocks of P tokens)
//                     block_tables [B,W] s32, context_lens [B] s32, valid [B,T] s32)
//       -> o [B,T,Hq,D] f32
//
// k, v and the pages share one dtype, float32 or bfloat16 (read in place, converted as read;
// arithmetic in float32).
// Attributes: scale (float32) and window (int64; 0: none, else a query sees the `window` latest
// keys up to its own position). The semantics are pdx.kernels.paged_attention_with_new's: query t
// of row b sits at position context_lens[b] - T + t; the key at position p is new token
// p - (context_lens[b] - T) when that token is valid, else slot p % P of block
// block_tables[b, p / P]; positions past W * P do not exist; a query at a negative position, or
// that sees no key, is zero. Block ids are clamped into [0, N) (as XLA's gather clamps).
//
// Nothing is gathered: one part per (row, key/value head) walks the row's blocks through its
// table, the G = Hq / Hk query heads of the group sharing every key it reads. Parts run on
// XLA's threads. pdx/kernels/onednn/_paged_attention.py calls this handler.

#include <cmath>
#include <cstring>
#include <vector>

#include "onednn.h"

using namespace pdx_dnnl;  // NOLINT: the handlers' shared helpers

namespace {

struct Geometry {
  int64_t batch, t, hq, hk, d, blocks, block_size, width, window;
  float scale;

  int64_t Group() const { return hq / hk; }
};

#if defined(__x86_64__)
#define PDX_PAGED __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PDX_PAGED
#endif

// A key/value element as float32: itself, or a bfloat16's bits as a float's top half.
inline float Load(float x) { return x; }
inline float Load(uint16_t x) {
  const uint32_t bits = static_cast<uint32_t>(x) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <typename Page>
PDX_PAGED float DotRow(const float* a, const Page* b, int64_t n) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += a[i] * Load(b[i]);
  return sum;
}

template <typename Page>
PDX_PAGED void AddScaled(float* acc, const Page* x, float w, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) acc[i] += w * Load(x[i]);
}

template <typename Page>
struct Operands {
  const float* q;
  const Page *k, *v, *k_pages, *v_pages;
  const int32_t *tables, *lens, *valid;
  float* o;
};

// Row b, key/value head kh: every query token of the row and every query head of the group. The
// keys of positions 0 .. the last query's are located once; query i reads a range of them.
template <typename Page>
void Part(const Geometry& s, const Operands<Page>& x, int64_t b, int64_t kh) {
  const int64_t g_count = s.Group(), d = s.d, hk = s.hk;
  const int64_t len = x.lens[b], first_new = len - s.t, positions = s.width * s.block_size;
  const int64_t last = std::min(len - 1, positions - 1);  // the last position any query of the row sees
  thread_local std::vector<float> logits;
  thread_local std::vector<const Page*> keys, values;
  keys.resize(std::max<int64_t>(last + 1, 0));
  values.resize(keys.size());
  for (int64_t p = 0; p <= last; ++p) {
    const int64_t fresh = p - first_new;
    if (fresh >= 0 && x.valid[b * s.t + fresh]) {
      keys[p] = x.k + ((b * s.t + fresh) * hk + kh) * d;
      values[p] = x.v + ((b * s.t + fresh) * hk + kh) * d;
    } else {
      const int64_t block = std::min<int64_t>(std::max<int64_t>(x.tables[b * s.width + p / s.block_size], 0),
                                              s.blocks - 1);
      const int64_t at = ((block * s.block_size + p % s.block_size) * hk + kh) * d;
      keys[p] = x.k_pages + at;
      values[p] = x.v_pages + at;
    }
  }
  for (int64_t i = 0; i < s.t; ++i) {
    const int64_t qpos = first_new + i;
    float* out = x.o + ((b * s.t + i) * s.hq + kh * g_count) * d;
    std::fill_n(out, g_count * d, 0.0f);
    const int64_t lo = s.window > 0 ? std::max<int64_t>(0, qpos - s.window + 1) : 0;
    const int64_t hi = std::min(qpos, last);
    if (qpos < 0 || hi < lo) continue;
    const int64_t n = hi - lo + 1;
    logits.resize(n);
    for (int64_t g = 0; g < g_count; ++g) {
      const float* qrow = x.q + ((b * s.t + i) * s.hq + kh * g_count + g) * d;
      float* row = logits.data();
      for (int64_t j = 0; j < n; ++j) row[j] = s.scale * DotRow(qrow, keys[lo + j], d);
      SoftmaxRow(row, n, n);
      for (int64_t j = 0; j < n; ++j) AddScaled(out + g * d, values[lo + j], row[j], d);
    }
  }
}

std::string Read(Geometry& s, ffi::Buffer<ffi::F32>& q, ffi::AnyBuffer& k, ffi::AnyBuffer& v, ffi::AnyBuffer& kp,
                 ffi::AnyBuffer& vp, ffi::Buffer<ffi::S32>& tables,
                 ffi::Buffer<ffi::S32>& lens, ffi::Buffer<ffi::S32>& valid, float scale, int64_t window) {
  auto dq = q.dimensions(), dk = k.dimensions(), dv = v.dimensions(), dp = kp.dimensions(), dvp = vp.dimensions();
  auto dt = tables.dimensions(), dl = lens.dimensions(), dm = valid.dimensions();
  if (dq.size() != 4 || dk.size() != 4 || dv.size() != 4 || dp.size() != 4 || dvp.size() != 4) {
    return "q, k, v and the pages must be 4-D";
  }
  s = {dq[0], dq[1], dq[2], dp[2], dq[3], dp[0], dp[1], dt.size() == 2 ? dt[1] : 0, window, scale};
  for (int a = 0; a < 4; ++a) {
    if (dk[a] != dv[a] || dp[a] != dvp[a]) return "k and v, and the two page pools, must share one shape";
  }
  if (dk[0] != s.batch || dk[1] != s.t || dk[2] != s.hk || dk[3] != s.d || dp[3] != s.d) {
    return "k and v must be [B, T, Hk, D] with q's B, T, D and the pages' Hk";
  }
  if (s.hk == 0 || s.hq % s.hk != 0) return "q's heads must be a multiple of the pages' heads";
  if (s.blocks == 0 || s.block_size == 0) return "the pages must hold at least one block of one slot";
  if (dt.size() != 2 || dt[0] != s.batch || s.width == 0) return "block_tables must be [B, W] with W >= 1";
  if (dl.size() != 1 || dl[0] != s.batch) return "context_lens must be [B]";
  if (dm.size() != 2 || dm[0] != s.batch || dm[1] != s.t) return "valid must be [B, T]";
  if (window < 0) return "window must be >= 0";
  const auto type = kp.element_type();
  if ((type != ffi::DataType::F32 && type != ffi::DataType::BF16) || k.element_type() != type ||
      v.element_type() != type || vp.element_type() != type) {
    return "k, v and the pages must share one dtype, float32 or bfloat16";
  }
  return "";
}

template <typename Page>
void Run(ffi::ThreadPool& pool, const Geometry& s, const Operands<Page>& x) {
  ParallelFor(pool, s.batch * s.hk, [&](int64_t unit) { Part(s, x, unit / s.hk, unit % s.hk); },
              std::max<int64_t>(1, pool.num_threads()));
}

template <typename Page>
Operands<Page> Pointers(ffi::Buffer<ffi::F32>& q, ffi::AnyBuffer& k, ffi::AnyBuffer& v, ffi::AnyBuffer& kp,
                        ffi::AnyBuffer& vp, ffi::Buffer<ffi::S32>& tables, ffi::Buffer<ffi::S32>& lens,
                        ffi::Buffer<ffi::S32>& valid, ffi::ResultBuffer<ffi::F32>& o) {
  auto at = [](ffi::AnyBuffer& buffer) { return static_cast<const Page*>(buffer.untyped_data()); };
  return {q.typed_data(),      at(k),           at(v),             at(kp), at(vp),
          tables.typed_data(), lens.typed_data(), valid.typed_data(), o->typed_data()};
}

ffi::Error Forward(ffi::ThreadPool pool, ffi::Buffer<ffi::F32> q, ffi::AnyBuffer k, ffi::AnyBuffer v,
                   ffi::AnyBuffer k_pages, ffi::AnyBuffer v_pages, ffi::Buffer<ffi::S32> tables,
                   ffi::Buffer<ffi::S32> lens, ffi::Buffer<ffi::S32> valid, ffi::ResultBuffer<ffi::F32> o,
                   float scale, int64_t window) {
  Geometry s;
  if (auto bad = Read(s, q, k, v, k_pages, v_pages, tables, lens, valid, scale, window); !bad.empty()) {
    return ffi::Error::InvalidArgument("pdx paged attention: " + bad);
  }
  try {
    if (k_pages.element_type() == ffi::DataType::BF16) {
      Run(pool, s, Pointers<uint16_t>(q, k, v, k_pages, v_pages, tables, lens, valid, o));
    } else {
      Run(pool, s, Pointers<float>(q, k, v, k_pages, v_pages, tables, lens, valid, o));
    }
  } catch (const std::exception& e) {
    return ffi::Error::Internal(std::string("pdx paged attention: ") + e.what());
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(PdxPagedAttention, Forward,
                              F32Rets<1>(ffi::Ffi::Bind()
                                             .Ctx<ffi::ThreadPool>()
                                             .Arg<ffi::Buffer<ffi::F32>>()
                                             .Arg<ffi::AnyBuffer>()
                                             .Arg<ffi::AnyBuffer>()
                                             .Arg<ffi::AnyBuffer>()
                                             .Arg<ffi::AnyBuffer>()
                                             .Arg<ffi::Buffer<ffi::S32>>()
                                             .Arg<ffi::Buffer<ffi::S32>>()
                                             .Arg<ffi::Buffer<ffi::S32>>())
                                  .Attr<float>("scale")
                                  .Attr<int64_t>("window"));
