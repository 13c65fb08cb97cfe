// LayerNorm on oneDNN, forward and backward, called from XLA:CPU as typed FFI custom calls;
// float32 rows [R, C] normalized over C:
//
//   PdxLayerNormForward(x [R,C], w [C], b [C]) -> y [R,C], mean [R], variance [R]
//   PdxLayerNormBackward(x, w, b, mean, variance, dy) -> dx [R,C], dw [C], db [C]
//   (oneDNN's backward primitive takes b, which does not change the gradients)
//
// y = (x - mean) / sqrt(variance + eps) * w + b, variance biased. Attribute: eps (float).
// The rows split over XLA's threads, each part a single-threaded oneDNN primitive (built
// once per shape); in the backward pass each part sums its own dw / db, added at the end.
// pdx/kernels/_onednn_norm.py calls these handlers.

#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "onednn.h"

using namespace pdx_dnnl;  // NOLINT: the handlers' shared helpers
using dnnl::memory;

namespace {

constexpr int64_t kMinRows = 64;  // rows per part at least

struct NormPlan {
  dnnl::primitive forward, backward;
  memory::desc forward_scratch, backward_scratch;
};

memory::desc Rows(int64_t rows, int64_t cols) { return memory::desc({rows, cols}, memory::data_type::f32, memory::format_tag::ab); }
memory::desc Vector(int64_t n) { return memory::desc({n}, memory::data_type::f32, memory::format_tag::a); }

const NormPlan& CachedNorm(int64_t rows, int64_t cols, float eps) {
  return Cached<NormPlan>(std::make_tuple(rows, cols, eps), [&](const auto&) {
    omp_set_num_threads(1);  // each part runs on one thread
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    auto forward = dnnl::layer_normalization_forward::primitive_desc(
        Engine(), dnnl::prop_kind::forward_training, Rows(rows, cols), Rows(rows, cols), Vector(rows), eps, flags, attr);
    auto backward = dnnl::layer_normalization_backward::primitive_desc(
        Engine(), dnnl::prop_kind::backward, Rows(rows, cols), Rows(rows, cols), Rows(rows, cols), Vector(rows), eps,
        flags, forward, attr);
    return NormPlan{dnnl::layer_normalization_forward(forward), dnnl::layer_normalization_backward(backward),
                    forward.scratchpad_desc(), backward.scratchpad_desc()};
  });
}

// [r0, r1) of `count` parts of `rows`.
std::pair<int64_t, int64_t> PartRows(int64_t rows, int64_t count, int64_t i) {
  return {rows * i / count, rows * (i + 1) / count};
}

int64_t PartCount(ffi::ThreadPool& pool, int64_t rows) {
  return std::max<int64_t>(1, std::min<int64_t>(pool.num_threads(), rows / kMinRows));
}

memory Wrap(const memory::desc& md, const void* data) { return memory(md, Engine(), const_cast<void*>(data)); }

// Runs a primitive with `args` and, where it asks for one, this thread's scratchpad.
void Execute(const dnnl::primitive& primitive, const memory::desc& scratch, std::unordered_map<int, memory> args) {
  if (scratch.get_size()) args[DNNL_ARG_SCRATCHPAD] = Wrap(scratch, ThreadBuffer(kScratch, scratch.get_size()));
  primitive.execute(ThreadStream(), args);
  ThreadStream().wait();
}

ffi::Error Forward(ffi::ThreadPool pool, ffi::Buffer<ffi::F32> x, ffi::Buffer<ffi::F32> w, ffi::Buffer<ffi::F32> b,
                   ffi::ResultBuffer<ffi::F32> y, ffi::ResultBuffer<ffi::F32> mean,
                   ffi::ResultBuffer<ffi::F32> variance, float eps) {
  if (x.dimensions().size() != 2 || w.element_count() != x.dimensions()[1] ||
      b.element_count() != x.dimensions()[1]) {
    return ffi::Error::InvalidArgument("pdx oneDNN layer norm: x must be [rows, cols], w and b [cols]");
  }
  const int64_t rows = x.dimensions()[0], cols = x.dimensions()[1];
  try {
    const int64_t count = PartCount(pool, rows);
    ParallelFor(pool, count, [&](int64_t i) {
      const auto [r0, r1] = PartRows(rows, count, i);
      const NormPlan& plan = CachedNorm(r1 - r0, cols, eps);
      Execute(plan.forward, plan.forward_scratch, {
          {DNNL_ARG_SRC, Wrap(Rows(r1 - r0, cols), x.typed_data() + r0 * cols)},
          {DNNL_ARG_DST, Wrap(Rows(r1 - r0, cols), y->typed_data() + r0 * cols)},
          {DNNL_ARG_MEAN, Wrap(Vector(r1 - r0), mean->typed_data() + r0)},
          {DNNL_ARG_VARIANCE, Wrap(Vector(r1 - r0), variance->typed_data() + r0)},
          {DNNL_ARG_SCALE, Wrap(Vector(cols), w.typed_data())},
          {DNNL_ARG_SHIFT, Wrap(Vector(cols), b.typed_data())}});
    });
  } catch (const std::exception& e) {
    return ffi::Error::Internal(std::string("pdx oneDNN layer norm: ") + e.what());
  }
  return ffi::Error::Success();
}

ffi::Error Backward(ffi::ThreadPool pool, ffi::Buffer<ffi::F32> x, ffi::Buffer<ffi::F32> w, ffi::Buffer<ffi::F32> b,
                    ffi::Buffer<ffi::F32> mean, ffi::Buffer<ffi::F32> variance, ffi::Buffer<ffi::F32> dy,
                    ffi::ResultBuffer<ffi::F32> dx, ffi::ResultBuffer<ffi::F32> dw, ffi::ResultBuffer<ffi::F32> db,
                    float eps) {
  if (x.dimensions().size() != 2 || w.element_count() != x.dimensions()[1] || b.element_count() != w.element_count() ||
      mean.element_count() != x.dimensions()[0] || dy.element_count() != x.element_count()) {
    return ffi::Error::InvalidArgument("pdx oneDNN layer norm: x and dy must be [rows, cols], w and b [cols], mean [rows]");
  }
  const int64_t rows = x.dimensions()[0], cols = x.dimensions()[1];
  try {
    const int64_t count = PartCount(pool, rows);
    // Part 0 writes dw / db directly; the others into partial sums added below.
    std::vector<float> partials(2 * cols * (count - 1));
    ParallelFor(pool, count, [&](int64_t i) {
      const auto [r0, r1] = PartRows(rows, count, i);
      const NormPlan& plan = CachedNorm(r1 - r0, cols, eps);
      float* dw_part = i == 0 ? dw->typed_data() : partials.data() + 2 * cols * (i - 1);
      float* db_part = i == 0 ? db->typed_data() : dw_part + cols;
      Execute(plan.backward, plan.backward_scratch, {
          {DNNL_ARG_SRC, Wrap(Rows(r1 - r0, cols), x.typed_data() + r0 * cols)},
          {DNNL_ARG_DIFF_DST, Wrap(Rows(r1 - r0, cols), dy.typed_data() + r0 * cols)},
          {DNNL_ARG_MEAN, Wrap(Vector(r1 - r0), mean.typed_data() + r0)},
          {DNNL_ARG_VARIANCE, Wrap(Vector(r1 - r0), variance.typed_data() + r0)},
          {DNNL_ARG_SCALE, Wrap(Vector(cols), w.typed_data())},
          {DNNL_ARG_SHIFT, Wrap(Vector(cols), b.typed_data())},
          {DNNL_ARG_DIFF_SRC, Wrap(Rows(r1 - r0, cols), dx->typed_data() + r0 * cols)},
          {DNNL_ARG_DIFF_SCALE, Wrap(Vector(cols), dw_part)},
          {DNNL_ARG_DIFF_SHIFT, Wrap(Vector(cols), db_part)}});
    });
    for (int64_t i = 1; i < count; ++i) {
      const float* part = partials.data() + 2 * cols * (i - 1);
      for (int64_t c = 0; c < cols; ++c) {
        dw->typed_data()[c] += part[c];
        db->typed_data()[c] += part[cols + c];
      }
    }
  } catch (const std::exception& e) {
    return ffi::Error::Internal(std::string("pdx oneDNN layer norm: ") + e.what());
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(PdxLayerNormForward, Forward,
                              F32Rets<3>(F32Args<3>(ffi::Ffi::Bind().Ctx<ffi::ThreadPool>()))
                                  .Attr<float>("eps"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(PdxLayerNormBackward, Backward,
                              F32Rets<3>(F32Args<6>(ffi::Ffi::Bind().Ctx<ffi::ThreadPool>()))
                                  .Attr<float>("eps"));
