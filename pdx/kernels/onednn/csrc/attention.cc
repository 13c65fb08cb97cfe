// Scaled dot-product attention on CPU, forward and backward, called from XLA:CPU as typed
// FFI custom calls; float32, Paddle's [batch, seq_len, num_heads, head_dim] layout:
//
//   PdxAttentionForward(q [B,Sq,Hq,D], k [B,Sk,Hk,D], v [B,Sk,Hk,Dv])
//       -> o [B,Sq,Hq,Dv], lse [B,Hq,Sq] (each query's log-sum-exp of its logits)
//   PdxAttentionBackward(q, k, v, o, lse, do [B,Sq,Hq,Dv]) -> dq, dk, dv
//
// Attributes: scale (float32; logits = scale * q k^T) and causal (int64; key j is
// visible to query i iff j <= i, top-left aligned). Query head h reads key/value head
// h / (Hq / Hk) (grouped-query attention).
//
// The work is split into tiles of kRows queries of one head. A tile's logits (kRows x
// the keys it sees) stay in its thread's cache from the first product to the second,
// and a causal tile skips the keys none of its queries sees. Products run on oneDNN's
// sgemm, single-threaded; tiles on XLA's threads. The backward pass recomputes the
// probabilities from lse and splits by (batch, key/value head), so that dk and dv,
// which sum over query tiles and over the heads of a group, have one writer each.
// pdx/kernels/_onednn_attention.py calls these handlers.

#include <cmath>
#include <cstring>

#include "onednn.h"

using namespace pdx_dnnl;  // NOLINT: the handlers' shared helpers

// Row loops are compiled for AVX-512, AVX2 and the baseline; the loader picks one.
#if defined(__x86_64__)
#define PDX_ROWS __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PDX_ROWS
#endif

namespace pdx_dnnl {

// Logits -> probabilities over the first `visible` of `keys` entries (the rest 0);
// returns the log-sum-exp.
PDX_ROWS float SoftmaxRow(float* s, int64_t visible, int64_t keys) {
  float m = -INFINITY;
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < visible; ++j) m = std::max(m, s[j]);
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < visible; ++j) {
    s[j] = Exp(s[j] - m);
    sum += s[j];
  }
  const float inverse = 1.0f / sum;
#pragma omp simd
  for (int64_t j = 0; j < visible; ++j) s[j] *= inverse;
  std::fill(s + visible, s + keys, 0.0f);
  return m + std::log(sum);
}

}  // namespace pdx_dnnl

namespace {

constexpr int64_t kRows = 64;  // queries per tile

struct Shape {
  int64_t batch, sq, sk, hq, hk, d, dv;
  float scale;
  bool causal;

  int64_t Group() const { return hq / hk; }
  int64_t Tiles() const { return (sq + kRows - 1) / kRows; }  // query tiles per head
  int64_t Keys(int64_t q0, int64_t rows) const { return causal ? std::min(sk, q0 + rows) : sk; }
  int64_t Visible(int64_t i) const { return causal ? std::min(sk, i + 1) : sk; }  // keys query i sees
  // Row strides of the four [B, S, H, D] operands.
  int64_t Ldq() const { return hq * d; }
  int64_t Ldk() const { return hk * d; }
  int64_t Ldv() const { return hk * dv; }
  int64_t Ldo() const { return hq * dv; }
};

// Logits -> probabilities exp(s - lse), the forward pass's softmax again.
PDX_ROWS void ProbabilitiesRow(float* s, int64_t visible, int64_t keys, float lse) {
#pragma omp simd
  for (int64_t j = 0; j < visible; ++j) s[j] = Exp(s[j] - lse);
  std::fill(s + visible, s + keys, 0.0f);
}

PDX_ROWS float Dot(const float* a, const float* b, int64_t n) {
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) sum += a[j] * b[j];
  return sum;
}

// dp (the probabilities' gradient) -> the logits' gradient p * (dp - delta).
PDX_ROWS void LogitGradRow(const float* p, float* dp, int64_t keys, float delta) {
#pragma omp simd
  for (int64_t j = 0; j < keys; ++j) dp[j] = p[j] * (dp[j] - delta);
}

// c [m, n] = alpha * op(a) @ op(b) + beta * c, row-major with leading dimensions.
void Gemm(char ta, char tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (dnnl_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) != dnnl_success) {
    throw std::runtime_error("oneDNN sgemm failed");
  }
}

struct Tile {
  int64_t b, h, q0, rows, keys;
};

Tile QueryTile(const Shape& s, int64_t b, int64_t h, int64_t i) {
  const int64_t q0 = i * kRows, rows = std::min(kRows, s.sq - q0);
  return {b, h, q0, rows, s.Keys(q0, rows)};
}

float* Buffer(Slot slot, const Tile& t) {
  return reinterpret_cast<float*>(ThreadBuffer(slot, sizeof(float) * t.rows * t.keys));
}

void ForwardTile(const Shape& s, const Tile& t, const float* q, const float* k, const float* v, float* o,
                 float* lse) {
  const int64_t kh = t.h / s.Group();
  const float* qt = q + (t.b * s.sq + t.q0) * s.Ldq() + t.h * s.d;
  const float* kt = k + t.b * s.sk * s.Ldk() + kh * s.d;
  const float* vt = v + t.b * s.sk * s.Ldv() + kh * s.dv;
  float* p = Buffer(kLogits, t);
  Gemm('N', 'T', t.rows, t.keys, s.d, s.scale, qt, s.Ldq(), kt, s.Ldk(), 0.0f, p, t.keys);
  float* lse_t = lse + (t.b * s.hq + t.h) * s.sq + t.q0;
  for (int64_t r = 0; r < t.rows; ++r) lse_t[r] = SoftmaxRow(p + r * t.keys, s.Visible(t.q0 + r), t.keys);
  Gemm('N', 'N', t.rows, s.dv, t.keys, 1.0f, p, t.keys, vt, s.Ldv(), 0.0f,
       o + (t.b * s.sq + t.q0) * s.Ldo() + t.h * s.dv, s.Ldo());
}

struct Gradients {
  const float *q, *k, *v, *o, *lse, *d_o;
  float *dq, *dk, *dv;
};

void BackwardTile(const Shape& s, const Tile& t, const Gradients& g) {
  const int64_t kh = t.h / s.Group();
  const int64_t q_at = (t.b * s.sq + t.q0) * s.Ldq() + t.h * s.d, o_at = (t.b * s.sq + t.q0) * s.Ldo() + t.h * s.dv;
  const int64_t k_at = t.b * s.sk * s.Ldk() + kh * s.d, v_at = t.b * s.sk * s.Ldv() + kh * s.dv;
  const float* lse_t = g.lse + (t.b * s.hq + t.h) * s.sq + t.q0;
  float* p = Buffer(kLogits, t);
  float* dp = Buffer(kLogitGrads, t);
  Gemm('N', 'T', t.rows, t.keys, s.d, s.scale, g.q + q_at, s.Ldq(), g.k + k_at, s.Ldk(), 0.0f, p, t.keys);
  for (int64_t r = 0; r < t.rows; ++r) ProbabilitiesRow(p + r * t.keys, s.Visible(t.q0 + r), t.keys, lse_t[r]);
  // dv += p^T do;  dp = do v^T;  ds = p * (dp - rowsum(do * o))
  Gemm('T', 'N', t.keys, s.dv, t.rows, 1.0f, p, t.keys, g.d_o + o_at, s.Ldo(), 1.0f, g.dv + v_at, s.Ldv());
  Gemm('N', 'T', t.rows, t.keys, s.dv, 1.0f, g.d_o + o_at, s.Ldo(), g.v + v_at, s.Ldv(), 0.0f, dp, t.keys);
  for (int64_t r = 0; r < t.rows; ++r) {
    const float delta = Dot(g.d_o + o_at + r * s.Ldo(), g.o + o_at + r * s.Ldo(), s.dv);
    LogitGradRow(p + r * t.keys, dp + r * t.keys, t.keys, delta);
  }
  // dq = scale * ds k;  dk += scale * ds^T q
  Gemm('N', 'N', t.rows, s.d, t.keys, s.scale, dp, t.keys, g.k + k_at, s.Ldk(), 0.0f, g.dq + q_at, s.Ldq());
  Gemm('T', 'N', t.keys, s.d, t.rows, s.scale, dp, t.keys, g.q + q_at, s.Ldq(), 1.0f, g.dk + k_at, s.Ldk());
}

// The call's shape from its operands, or why they do not fit.
std::string Read(Shape& s, ffi::Buffer<ffi::F32>& q, ffi::Buffer<ffi::F32>& k, ffi::Buffer<ffi::F32>& v, float scale,
                 int64_t causal) {
  auto dq = q.dimensions(), dk = k.dimensions(), dv = v.dimensions();
  if (dq.size() != 4 || dk.size() != 4 || dv.size() != 4) return "q, k and v must be 4-D [batch, seq, heads, dim]";
  s = {dq[0], dq[1], dk[1], dq[2], dk[2], dq[3], dv[3], scale, causal != 0};
  if (dk[0] != s.batch || dv[0] != s.batch || dv[1] != s.sk || dv[2] != s.hk || dk[3] != s.d) {
    return "k and v must share q's batch, k's sequence and heads, and k q's head dim";
  }
  if (s.hk == 0 || s.hq % s.hk != 0) return "q's heads must be a multiple of k's";
  if (s.sk == 0) return "k must hold at least one key";
  return "";
}

int64_t Workers(ffi::ThreadPool& pool) { return std::max<int64_t>(1, pool.num_threads()); }

ffi::Error Forward(ffi::ThreadPool pool, ffi::Buffer<ffi::F32> q, ffi::Buffer<ffi::F32> k, ffi::Buffer<ffi::F32> v,
                   ffi::ResultBuffer<ffi::F32> o, ffi::ResultBuffer<ffi::F32> lse, float scale, int64_t causal) {
  Shape s;
  if (auto bad = Read(s, q, k, v, scale, causal); !bad.empty()) {
    return ffi::Error::InvalidArgument("pdx oneDNN attention: " + bad);
  }
  try {
    const int64_t per_head = s.Tiles();
    ParallelFor(pool, s.batch * s.hq * per_head, [&](int64_t i) {
      const Tile t = QueryTile(s, i / (s.hq * per_head), i / per_head % s.hq, i % per_head);
      ForwardTile(s, t, q.typed_data(), k.typed_data(), v.typed_data(), o->typed_data(), lse->typed_data());
    }, Workers(pool));
  } catch (const std::exception& e) {
    return ffi::Error::Internal(std::string("pdx oneDNN attention: ") + e.what());
  }
  return ffi::Error::Success();
}

ffi::Error Backward(ffi::ThreadPool pool, ffi::Buffer<ffi::F32> q, ffi::Buffer<ffi::F32> k, ffi::Buffer<ffi::F32> v,
                    ffi::Buffer<ffi::F32> o, ffi::Buffer<ffi::F32> lse, ffi::Buffer<ffi::F32> d_o,
                    ffi::ResultBuffer<ffi::F32> dq, ffi::ResultBuffer<ffi::F32> dk, ffi::ResultBuffer<ffi::F32> dv,
                    float scale, int64_t causal) {
  Shape s;
  if (auto bad = Read(s, q, k, v, scale, causal); !bad.empty()) {
    return ffi::Error::InvalidArgument("pdx oneDNN attention: " + bad);
  }
  Gradients g{q.typed_data(),  k.typed_data(),   v.typed_data(),   o.typed_data(),  lse.typed_data(),
              d_o.typed_data(), dq->typed_data(), dk->typed_data(), dv->typed_data()};
  try {
    // One part per (batch, key/value head): the only writer of its rows of dk and dv.
    ParallelFor(pool, s.batch * s.hk, [&](int64_t unit) {
      const int64_t b = unit / s.hk, kh = unit % s.hk;
      for (int64_t j = 0; j < s.sk; ++j) {
        std::fill_n(g.dk + (b * s.sk + j) * s.Ldk() + kh * s.d, s.d, 0.0f);
        std::fill_n(g.dv + (b * s.sk + j) * s.Ldv() + kh * s.dv, s.dv, 0.0f);
      }
      for (int64_t h = kh * s.Group(); h < (kh + 1) * s.Group(); ++h) {
        for (int64_t i = 0; i < s.Tiles(); ++i) BackwardTile(s, QueryTile(s, b, h, i), g);
      }
    }, Workers(pool));
  } catch (const std::exception& e) {
    return ffi::Error::Internal(std::string("pdx oneDNN attention: ") + e.what());
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(PdxAttentionForward, Forward,
                              F32Rets<2>(F32Args<3>(ffi::Ffi::Bind().Ctx<ffi::ThreadPool>()))
                                  .Attr<float>("scale")
                                  .Attr<int64_t>("causal"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(PdxAttentionBackward, Backward,
                              F32Rets<3>(F32Args<6>(ffi::Ffi::Bind().Ctx<ffi::ThreadPool>()))
                                  .Attr<float>("scale")
                                  .Attr<int64_t>("causal"));
