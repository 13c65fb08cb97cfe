// 2-D convolutions and matmuls on oneDNN, called from XLA:CPU as typed FFI custom calls.
//
// PdxMatmul(a, b) -> op(a) @ op(b), op a transpose where the attributes ask.
// PdxMatmulInference(a [M,K], b, token) -> c [M,N] float32 = a @ op(b), op(b) = b [K,N] or, with
// the attribute transpose_b, b [N,K] transposed: b float32 and constant per token (an artifact's
// Linear weight), kept in the kernel's layout under (token, site) like PdxConvInference's
// weights (as bfloat16 when a is bfloat16).
// For convolutions, three handlers, one per direction of a convolution with channels-last
// activations and the weight in Paddle's [out, in, kh, kw] layout:
//
//   PdxConvForward(x [N,H,W,C], w [O,C,KH,KW])         -> y  [N,OH,OW,O]
//   PdxConvBackwardData(dy [N,OH,OW,O], w [O,C,KH,KW]) -> dx [N,H,W,C]
//   PdxConvBackwardWeights(x [N,H,W,C], dy [N,OH,OW,O]) -> dw [O,C,KH,KW]
//   PdxConvInference(x, w, scale [O], shift [O], residual, token [int32 scalar])
//       -> y = act(conv(x, w * scale) + shift + residual), act = identity or min(relu, relu_max)
//
// PdxConvInference serves programs whose weights are constant per token (an exported
// model's parameters, which a loaded artifact passes with a token of its own): the first
// call scales each weight per output channel (a folded BatchNorm), reorders it into the
// kernel's layout and keeps it under (token, site), the call site's number in the program;
// later calls with that token skip both. Token 0 keeps nothing. shift is the kernel's bias,
// residual (y's shape, used where the attribute `residual` is 1) and relu are post-ops.
// PdxForgetWeights(token) frees a token's weights (the artifact is gone).
// PdxMaxPool(x [N,H,W,C]) -> y [N,OH,OW,C]: a max pool of inference programs (padding never
// wins; attributes kernel, strides, padding_lo, padding_hi), whole images split over the threads.
//
// Attributes (int64 arrays of length 2): strides, dilation (1 = dense),
// padding_lo, padding_hi; and groups (the weight is [out, in / groups, kh, kw]).
// float32 or bfloat16, all operands the same type.
// Activations stay channels-last; the weight is reordered to (and the weight
// gradient from) the layout the chosen oneDNN kernel wants, once per call.
// Primitives are built once per geometry and cached; scratchpads are per call,
// so concurrent calls from XLA's threads are safe. pdx/kernels/_onednn.py
// builds this file and registers the handlers.

#include <cmath>
#include <cstring>
#include <map>
#include <tuple>
#include <utility>
#include <unordered_map>
#include <vector>

#include "onednn.h"

using namespace pdx_dnnl;  // NOLINT: this file's own helpers
using dnnl::memory;
using Span = ffi::Span<const int64_t>;

namespace {

enum class Direction { kForward, kBackwardData, kBackwardWeights, kInference };

struct Geometry {
  Direction direction;
  int threads;  // OpenMP threads the primitive runs with: 1 for a part, all for an unsplit call
  memory::data_type type;
  memory::dims src, weights, dst;  // logical {N,C,H,W}, {O,I,KH,KW}, {N,O,OH,OW}
  memory::dims strides, dilation, padding_lo, padding_hi;  // dilation in oneDNN's sense (0 = dense)
  bool residual = false, relu = false;  // inference post-ops (inference also adds a float32 bias)
  float relu_max = 0;                   // the ReLU's upper bound (infinity: none; 6: ReLU6)

  auto key() const {
    return std::tie(direction, threads, type, src, weights, dst, strides, dilation, padding_lo, padding_hi, residual,
                    relu, relu_max);
  }
  bool operator<(const Geometry& other) const { return key() < other.key(); }
};

// One geometry's primitive and the layouts it wants.
struct Plan {
  dnnl::primitive primitive;
  memory::desc weights;     // the layout the primitive reads / writes the weight in
  memory::desc scratchpad;
};

dnnl::primitive_attr Attributes() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

Plan MakePlan(const Geometry& g) {
  omp_set_num_threads(g.threads);  // oneDNN picks its blocking for the threads it will run on
  auto& engine = Engine();
  memory::desc src(g.src, g.type, memory::format_tag::nhwc);
  memory::desc dst(g.dst, g.type, memory::format_tag::nhwc);
  memory::desc any_weights(g.weights, g.type, memory::format_tag::any);
  auto attr = Attributes();
  if (g.direction == Direction::kInference) {
    memory::desc bias({g.dst[1]}, memory::data_type::f32, memory::format_tag::a);
    dnnl::post_ops ops;
    if (g.residual) ops.append_binary(dnnl::algorithm::binary_add, dst);
    if (g.relu && std::isinf(g.relu_max)) ops.append_eltwise(dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    if (g.relu && !std::isinf(g.relu_max)) ops.append_eltwise(dnnl::algorithm::eltwise_clip_v2, 0.f, g.relu_max);
    attr.set_post_ops(ops);
    auto pd = dnnl::convolution_forward::primitive_desc(
        engine, dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src, any_weights, bias, dst,
        g.strides, g.dilation, g.padding_lo, g.padding_hi, attr);
    return {dnnl::convolution_forward(pd), pd.weights_desc(), pd.scratchpad_desc()};
  }
  auto forward = dnnl::convolution_forward::primitive_desc(
      engine, dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, src, any_weights,
      dst, g.strides, g.dilation, g.padding_lo, g.padding_hi, attr);
  switch (g.direction) {
    case Direction::kForward:
    case Direction::kInference:  // built above
      return {dnnl::convolution_forward(forward), forward.weights_desc(), forward.scratchpad_desc()};
    case Direction::kBackwardData: {
      auto pd = dnnl::convolution_backward_data::primitive_desc(
          engine, dnnl::algorithm::convolution_direct, src, any_weights, dst, g.strides, g.dilation,
          g.padding_lo, g.padding_hi, forward, attr);
      return {dnnl::convolution_backward_data(pd), pd.weights_desc(), pd.scratchpad_desc()};
    }
    case Direction::kBackwardWeights: {
      auto pd = dnnl::convolution_backward_weights::primitive_desc(
          engine, dnnl::algorithm::convolution_direct, src, any_weights, dst, g.strides, g.dilation,
          g.padding_lo, g.padding_hi, forward, attr);
      return {dnnl::convolution_backward_weights(pd), pd.diff_weights_desc(), pd.scratchpad_desc()};
    }
  }
  throw std::runtime_error("unknown convolution direction");
}

const Plan& CachedPlan(const Geometry& g) { return Cached<Plan>(g, MakePlan); }

memory::dims Nchw(ffi::AnyBuffer::Dimensions d) { return {d[0], d[3], d[1], d[2]}; }
memory::dims Oihw(ffi::AnyBuffer::Dimensions d) { return {d[0], d[1], d[2], d[3]}; }

// Paddle's weight layout, grouped or not.
memory::format_tag PlainWeights(const Geometry& g) {
  return g.weights.size() == 5 ? memory::format_tag::goihw : memory::format_tag::oihw;
}

size_t ByteWidth(memory::data_type type) { return type == memory::data_type::f32 ? 4 : 2; }

// Runs one direction over the images [n0, n0 + g.src[0]) of the call on g.threads threads.
// `weights` is the weight in the plan's layout (forward / backward-data), or where the
// backward-weights partial sum goes.
// Inference adds `bias` (float32, per output channel) and `residual` (this part's rows).
void RunPart(const Geometry& g, const uint8_t* a, const uint8_t* b, uint8_t* out, uint8_t* weights,
             const float* bias = nullptr, const uint8_t* residual = nullptr) {
  omp_set_num_threads(g.threads);
  const Plan& plan = CachedPlan(g);
  auto& engine = Engine();
  dnnl::stream& stream = ThreadStream();
  memory::desc src_md(g.src, g.type, memory::format_tag::nhwc);
  memory::desc dst_md(g.dst, g.type, memory::format_tag::nhwc);
  memory scratchpad(plan.scratchpad, engine, ThreadBuffer(kScratch, plan.scratchpad.get_size()));
  memory w(plan.weights, engine, weights);
  void* pa = const_cast<uint8_t*>(a);
  void* pb = const_cast<uint8_t*>(b);
  switch (g.direction) {
    case Direction::kInference: {
      memory::desc bias_md({g.dst[1]}, memory::data_type::f32, memory::format_tag::a);
      std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(src_md, engine, pa)}, {DNNL_ARG_WEIGHTS, w},
                                           {DNNL_ARG_BIAS, memory(bias_md, engine, const_cast<float*>(bias))},
                                           {DNNL_ARG_DST, memory(dst_md, engine, out)},
                                           {DNNL_ARG_SCRATCHPAD, scratchpad}};
      if (g.residual) {
        args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] =
            memory(dst_md, engine, const_cast<uint8_t*>(residual));
      }
      plan.primitive.execute(stream, args);
      break;
    }
    case Direction::kForward:
      plan.primitive.execute(stream, {{DNNL_ARG_SRC, memory(src_md, engine, pa)}, {DNNL_ARG_WEIGHTS, w},
                                      {DNNL_ARG_DST, memory(dst_md, engine, out)}, {DNNL_ARG_SCRATCHPAD, scratchpad}});
      break;
    case Direction::kBackwardData:
      plan.primitive.execute(stream, {{DNNL_ARG_DIFF_DST, memory(dst_md, engine, pa)}, {DNNL_ARG_WEIGHTS, w},
                                      {DNNL_ARG_DIFF_SRC, memory(src_md, engine, out)},
                                      {DNNL_ARG_SCRATCHPAD, scratchpad}});
      break;
    case Direction::kBackwardWeights:
      plan.primitive.execute(stream, {{DNNL_ARG_SRC, memory(src_md, engine, pa)},
                                      {DNNL_ARG_DIFF_DST, memory(dst_md, engine, pb)}, {DNNL_ARG_DIFF_WEIGHTS, w},
                                      {DNNL_ARG_SCRATCHPAD, scratchpad}});
      break;
  }
  stream.wait();
}

// Copies a weight between Paddle's [out, in, kh, kw] layout and a oneDNN one, split
// over whole blocks of output channels.
void ReorderWeights(ffi::ThreadPool& pool, const memory::desc& from_md, void* from, const memory::desc& to_md,
                    void* to) {
  auto& engine = Engine();
  const memory::desc& blocked = from_md.get_format_kind() == memory::format_kind::blocked &&
                                from_md.get_inner_nblks() ? from_md : to_md;
  int64_t block = 1;
  auto blocks = blocked.get_inner_blks();
  auto idxs = blocked.get_inner_idxs();
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (idxs[i] == 0) block *= blocks[i];
  }
  const memory::dims dims = from_md.get_dims();
  const int64_t blocks_out = (dims[0] + block - 1) / block;
  const int64_t count = std::max<int64_t>(1, std::min<int64_t>(pool.num_threads(), blocks_out));
  ParallelFor(pool, count, [&](int64_t i) {
    const int64_t b0 = blocks_out * i / count, b1 = blocks_out * (i + 1) / count;
    const int64_t o0 = b0 * block, o1 = std::min<int64_t>(b1 * block, dims[0]);
    memory::dims part = dims, offsets(dims.size(), 0);
    part[0] = o1 - o0, offsets[0] = o0;
    dnnl::stream& stream = ThreadStream();
    memory src(count == 1 ? from_md : from_md.submemory_desc(part, offsets), engine, from);
    memory dst(count == 1 ? to_md : to_md.submemory_desc(part, offsets), engine, to);
    dnnl::reorder(src, dst).execute(stream, src, dst);
    stream.wait();
  });
}

// Weights reordered once per (token, call site): one copy per layout a kernel asked for
// (a site's kernels may differ by batch size).
struct KeptWeights {
  std::mutex mutex;
  std::vector<std::pair<memory::desc, std::unique_ptr<uint8_t[]>>> copies;
};

constexpr int64_t kMaxParts = 256;  // channel parts per call at most (kept weights' key)

std::mutex& KeptMutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}

std::map<std::pair<int64_t, int64_t>, std::unique_ptr<KeptWeights>>& Kept() {
  static auto* kept = new std::map<std::pair<int64_t, int64_t>, std::unique_ptr<KeptWeights>>;
  return *kept;
}

// What an inference call adds to a forward convolution (see PdxConvInference).
struct InferenceArgs {
  int64_t token = 0, site = 0;
  int64_t part = 0;  // a channel part's number (1, 2, ...; 0: the whole weight), kept apart
  const float* scale = nullptr;  // per output channel, applied to the weight
  const float* shift = nullptr;  // per output channel: the bias
  const uint8_t* residual = nullptr;
  bool relu = false;
  float relu_max = INFINITY;  // the ReLU's upper bound (6: ReLU6)
};

float Bf16ToF32(uint16_t v) {
  uint32_t u = uint32_t(v) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t F32ToBf16(float f) {  // round to nearest even; NaN stays NaN
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}

// to = from * scale[o] for a weight in Paddle's layout (each output channel contiguous).
void ScaleWeights(const Geometry& g, memory::data_type type, const uint8_t* from, const float* scale, uint8_t* to) {
  const int64_t outputs = g.dst[1];
  int64_t elements = 1;
  for (auto d : g.weights) elements *= d;
  const int64_t per = elements / outputs;
  for (int64_t o = 0; o < outputs; ++o) {
    if (type == memory::data_type::f32) {
      const auto* f = reinterpret_cast<const float*>(from) + o * per;
      auto* t = reinterpret_cast<float*>(to) + o * per;
      for (int64_t i = 0; i < per; ++i) t[i] = f[i] * scale[o];
    } else {
      const auto* f = reinterpret_cast<const uint16_t*>(from) + o * per;
      auto* t = reinterpret_cast<uint16_t*>(to) + o * per;
      for (int64_t i = 0; i < per; ++i) t[i] = F32ToBf16(Bf16ToF32(f[i]) * scale[o]);
    }
  }
}

// The weight kept under (token, key) in layout `to_md` (a key's kernels may want several
// layouts, e.g. per batch size); `fill` writes it on first use.
uint8_t* KeptCopy(int64_t token, int64_t key, const memory::desc& to_md, const std::function<void(uint8_t*)>& fill) {
  KeptWeights* entry;
  {
    std::lock_guard<std::mutex> lock(KeptMutex());
    auto& slot = Kept()[{token, key}];
    if (!slot) slot = std::make_unique<KeptWeights>();
    entry = slot.get();
  }
  std::lock_guard<std::mutex> lock(entry->mutex);
  for (auto& copy : entry->copies) {
    if (copy.first == to_md) return Aligned(copy.second.get());
  }
  std::unique_ptr<uint8_t[]> data(new uint8_t[to_md.get_size() + 64]);
  fill(Aligned(data.get()));
  entry->copies.emplace_back(to_md, std::move(data));
  return Aligned(entry->copies.back().second.get());
}

// The scaled weight in the plan's layout `to_md`: kept under (token, site), or made for
// this call (token 0) in the calling thread's buffers.
uint8_t* InferenceWeights(ffi::ThreadPool& pool, const InferenceArgs& args, const Geometry& g,
                          const memory::desc& from_md, const uint8_t* from, const memory::desc& to_md) {
  const size_t plain_size = from_md.get_size();
  auto prepare = [&](uint8_t* scaled, uint8_t* to) {
    ScaleWeights(g, from_md.get_data_type(), from, args.scale, scaled);
    if (to != scaled) ReorderWeights(pool, from_md, scaled, to_md, to);
  };
  if (args.token == 0) {
    uint8_t* scaled = ThreadBuffer(kScaled, plain_size);
    uint8_t* to = to_md == from_md ? scaled : ThreadBuffer(kWeights, to_md.get_size());
    prepare(scaled, to);
    return to;
  }
  return KeptCopy(args.token, args.site * kMaxParts + args.part, to_md, [&](uint8_t* to) {
    if (to_md == from_md) {
      prepare(to, to);
    } else {
      std::unique_ptr<uint8_t[]> scaled(new uint8_t[plain_size + 64]);
      prepare(Aligned(scaled.get()), to);
    }
  });
}

// A call's parts: each part's geometry and its first byte in a and in out.
struct Split {
  std::vector<Geometry> geometry;
  std::vector<size_t> a_offset, out_offset;
};

// `count` parts of whole images (backward-data reads dy and writes dx).
Split ImageParts(const Geometry& g, Direction direction, int64_t count, size_t src_image, size_t dst_image) {
  Split parts{std::vector<Geometry>(count, g), std::vector<size_t>(count), std::vector<size_t>(count)};
  const bool backward_data = direction == Direction::kBackwardData;
  const int64_t images = g.src[0];
  for (int64_t i = 0, n0 = 0; i < count; ++i) {
    const int64_t n = images / count + (i < images % count ? 1 : 0);
    parts.a_offset[i] = n0 * (backward_data ? dst_image : src_image);
    parts.out_offset[i] = n0 * (backward_data ? src_image : dst_image);
    parts.geometry[i].src[0] = parts.geometry[i].dst[0] = n;
    n0 += n;
  }
  return parts;
}

// One image's output rows in `count` single-threaded parts, each a convolution over the
// input rows it reads; no parts when their kernels would want different weight layouts.
Split RowParts(const Geometry& g, int64_t count, size_t width) {
  Split parts{std::vector<Geometry>(count, g), std::vector<size_t>(count), std::vector<size_t>(count)};
  const int64_t s = g.strides[0], span = (g.weights[g.weights.size() - 2] - 1) * (g.dilation[0] + 1) + 1;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t r0 = g.dst[2] * i / count, r1 = g.dst[2] * (i + 1) / count;
    const int64_t first = r0 * s - g.padding_lo[0], end = (r1 - 1) * s - g.padding_lo[0] + span;
    const int64_t lo = std::max<int64_t>(0, first), hi = std::min<int64_t>(g.src[2], end);
    Geometry& part = parts.geometry[i];
    part.threads = 1;
    part.src[2] = hi - lo, part.dst[2] = r1 - r0;
    part.padding_lo[0] = lo - first, part.padding_hi[0] = end - hi;
    parts.a_offset[i] = lo * g.src[3] * g.src[1] * width;
    parts.out_offset[i] = r0 * g.dst[3] * g.dst[1] * width;
  }
  for (const auto& part : parts.geometry) {
    if (CachedPlan(part).weights != CachedPlan(parts.geometry[0]).weights) return {};
  }
  return parts;
}

// An inference call's output channels in `count` single-threaded parts, each a convolution
// with its own slice of the weight writing a dense block of channels that is copied into
// place; for calls with fewer images than threads and too few output rows to split
// (heavy weights over small maps: ResNet's 7x7 stage), which would otherwise run on
// oneDNN's OpenMP threads (2-3x slower inside XLA's than alone). No parts unless the
// channels split into equal multiples of 16.
Split ChannelParts(const Geometry& g, int64_t count) {
  if (g.weights.size() != 4 || count < 2 || count > kMaxParts - 1 || g.dst[1] % (16 * count)) return {};
  Split parts{std::vector<Geometry>(count, g), std::vector<size_t>(count, 0), std::vector<size_t>(count)};
  const int64_t per = g.dst[1] / count;
  for (int64_t i = 0; i < count; ++i) {
    Geometry& part = parts.geometry[i];
    part.threads = 1;
    part.dst[1] = part.weights[0] = per;
    parts.out_offset[i] = i * per;  // the part's first output channel
  }
  return parts;
}

// Copies `channels` channels per pixel between a dense [pixels, channels] block and the
// channels [first, first + channels) of a [pixels, total] tensor.
void CopyChannels(const uint8_t* from, uint8_t* to, int64_t pixels, int64_t channels, int64_t total, int64_t first,
                  size_t width, bool into_tensor) {
  const size_t block = channels * width, row = total * width, offset = first * width;
  for (int64_t p = 0; p < pixels; ++p) {
    if (into_tensor) {
      std::memcpy(to + p * row + offset, from + p * block, block);
    } else {
      std::memcpy(to + p * block, from + p * row + offset, block);
    }
  }
}

// Runs an inference call split by ChannelParts: x is read whole by every part; each part
// scales and keeps its own weight slice (kept under the part's number), adds its slice of
// the bias and the residual, and writes its channels of y.
void RunChannelParts(ffi::ThreadPool& pool, const Split& parts, const InferenceArgs& inference,
                     memory::data_type weight_type, const uint8_t* x, const uint8_t* w, uint8_t* y) {
  const int64_t count = parts.geometry.size();
  const Geometry& first = parts.geometry[0];
  const int64_t per = first.dst[1], total = per * count, pixels = first.dst[0] * first.dst[2] * first.dst[3];
  const size_t width = ByteWidth(first.type);
  const Plan& plan = CachedPlan(first);  // every part has the same geometry
  const memory::desc plain(first.weights, weight_type, PlainWeights(first));
  const size_t slice = plain.get_size();  // a part's weight: whole output channels, contiguous
  ParallelFor(pool, count, [&](int64_t i) {
    const Geometry& part = parts.geometry[i];
    InferenceArgs args = inference;
    args.part = i + 1;
    args.scale = inference.scale + i * per;
    uint8_t* weights = InferenceWeights(pool, args, part, plain, w + i * slice, plan.weights);
    const uint8_t* residual = nullptr;
    if (part.residual) {
      uint8_t* dense = ThreadBuffer(kPartResidual, pixels * per * width);
      CopyChannels(inference.residual, dense, pixels, per, total, i * per, width, false);
      residual = dense;
    }
    uint8_t* out = ThreadBuffer(kPartOutput, pixels * per * width);
    RunPart(part, x, nullptr, out, weights, inference.shift + i * per, residual);
    CopyChannels(out, y, pixels, per, total, i * per, width, true);
  });
}

ffi::Error Run(ffi::ThreadPool pool, Direction direction, ffi::AnyBuffer a, ffi::AnyBuffer b,
               ffi::Result<ffi::AnyBuffer> out, Span strides, Span dilation, Span padding_lo, Span padding_hi,
               int64_t groups, const InferenceArgs* inference = nullptr) {
  // Inference may take a float32 weight for bfloat16 activations (kept as bfloat16).
  const bool mixed = inference && a.element_type() == ffi::DataType::BF16 && b.element_type() == ffi::DataType::F32;
  if ((a.element_type() != b.element_type() && !mixed) || a.element_type() != out->element_type() ||
      (a.element_type() != ffi::DataType::F32 && a.element_type() != ffi::DataType::BF16)) {
    return ffi::Error::InvalidArgument("pdx oneDNN convolution: operands must all be float32 or bfloat16");
  }
  if (a.dimensions().size() != 4 || b.dimensions().size() != 4 || out->dimensions().size() != 4 ||
      strides.size() != 2 || dilation.size() != 2 || padding_lo.size() != 2 || padding_hi.size() != 2) {
    return ffi::Error::InvalidArgument("pdx oneDNN convolution: 4-D operands and 2-element attributes expected");
  }
  Geometry g;
  g.direction = direction;
  g.type = a.element_type() == ffi::DataType::F32 ? memory::data_type::f32 : memory::data_type::bf16;
  switch (direction) {
    case Direction::kForward:
    case Direction::kInference:
      g.src = Nchw(a.dimensions()), g.weights = Oihw(b.dimensions()), g.dst = Nchw(out->dimensions());
      break;
    case Direction::kBackwardData:
      g.dst = Nchw(a.dimensions()), g.weights = Oihw(b.dimensions()), g.src = Nchw(out->dimensions());
      break;
    case Direction::kBackwardWeights:
      g.src = Nchw(a.dimensions()), g.dst = Nchw(b.dimensions()), g.weights = Oihw(out->dimensions());
      break;
  }
  g.strides = {strides[0], strides[1]};
  g.dilation = {dilation[0] - 1, dilation[1] - 1};
  g.padding_lo = {padding_lo[0], padding_lo[1]};
  g.padding_hi = {padding_hi[0], padding_hi[1]};
  g.residual = inference && inference->residual;
  g.relu = inference && inference->relu;
  g.relu_max = inference ? inference->relu_max : INFINITY;
  if (groups < 1 || g.weights[0] % groups) {
    return ffi::Error::InvalidArgument("pdx oneDNN convolution: groups must divide the output channels");
  }
  if (groups > 1) {  // [out, in / groups, kh, kw] viewed as [groups, out / groups, in / groups, kh, kw]
    g.weights = {groups, g.weights[0] / groups, g.weights[1], g.weights[2], g.weights[3]};
  }
  try {
    const int64_t images = g.src[0];
    const size_t width = ByteWidth(g.type);
    const size_t src_image = g.src[1] * g.src[2] * g.src[3] * width;
    const size_t dst_image = g.dst[1] * g.dst[2] * g.dst[3] * width;
    // bfloat16 weight gradients are not split: their partial sums would round.
    const bool split = !(direction == Direction::kBackwardWeights && g.type == memory::data_type::bf16);
    const int64_t threads = std::max<int64_t>(1, pool.num_threads());
    const bool forward = direction == Direction::kForward || direction == Direction::kInference;
    Split parts;
    // One image splits its output rows over the threads (faster than oneDNN's OpenMP
    // threads inside XLA's), given a few rows per part, or two with a light weight;
    // heavy weights over small maps (ResNet's 7x7 stage) run best on OpenMP.
    const size_t weight_bytes = g.weights[0] * g.weights[1] * g.weights[2] * g.weights[3] *
                                (g.weights.size() == 5 ? g.weights[4] : 1) * width;
    const int64_t min_rows = (weight_bytes <= (size_t{1} << 20) ? 2 : 4) * threads;
    if (images == 1 && forward && threads > 1 && g.dst[2] >= min_rows) {
      parts = RowParts(g, threads, width);
    }
    if (parts.geometry.empty() && inference && images > 0 && images < threads) {
      Split channels = ChannelParts(g, threads);
      if (!channels.geometry.empty()) {
        RunChannelParts(pool, channels, *inference, mixed ? memory::data_type::f32 : g.type,
                        static_cast<const uint8_t*>(a.untyped_data()), static_cast<const uint8_t*>(b.untyped_data()),
                        static_cast<uint8_t*>(out->untyped_data()));
        return ffi::Error::Success();
      }
    }
    if (parts.geometry.empty()) {
      parts = ImageParts(g, direction, split ? std::min<int64_t>(threads, images) : 1, src_image, dst_image);
    }
    const int64_t count = parts.geometry.size();
    std::vector<Geometry>& geometry = parts.geometry;
    const std::vector<size_t>& a_offset = parts.a_offset;
    const std::vector<size_t>& out_offset = parts.out_offset;
    // A call that cannot be split (bfloat16 weight gradients, too few rows) runs on OpenMP threads.
    for (auto& part : geometry) part.threads = count == 1 ? threads : 1;
    const Plan& plan = CachedPlan(geometry[0]);  // every part's weight layout is the same
    memory::desc plain_weights(g.weights, mixed ? memory::data_type::f32 : g.type, PlainWeights(g));
    const bool reorder = plan.weights != plain_weights;
    const size_t packed_size = plan.weights.get_size();
    auto* pa = static_cast<uint8_t*>(a.untyped_data());
    auto* pb = static_cast<uint8_t*>(b.untyped_data());
    auto* po = static_cast<uint8_t*>(out->untyped_data());

    // The weight in the plan's layout: one copy read by every part, or one partial
    // weight gradient per part, summed at the end.
    const bool gradient = direction == Direction::kBackwardWeights;
    const int64_t copies = gradient ? count : 1;
    uint8_t* packed = ThreadBuffer(kWeights, gradient || reorder ? packed_size * copies : 0);
    std::vector<uint8_t*> weights(copies);
    for (int64_t i = 0; i < copies; ++i) {
      weights[i] = gradient || reorder ? packed + i * packed_size : pb;
    }
    if (gradient && count == 1 && !reorder) weights[0] = po;
    if (inference) {
      weights[0] = InferenceWeights(pool, *inference, g, plain_weights, pb, plan.weights);
    } else if (!gradient && reorder) {
      ReorderWeights(pool, plain_weights, pb, plan.weights, weights[0]);
    }

    ParallelFor(pool, count, [&](int64_t i) {
      switch (direction) {
        case Direction::kForward:
        case Direction::kBackwardData:
          RunPart(geometry[i], pa + a_offset[i], nullptr, po + out_offset[i], weights[0]);
          break;
        case Direction::kInference:
          RunPart(geometry[i], pa + a_offset[i], nullptr, po + out_offset[i], weights[0], inference->shift,
                  inference->residual ? inference->residual + out_offset[i] : nullptr);
          break;
        case Direction::kBackwardWeights:  // out_offset is the gradient's rows of dy
          RunPart(geometry[i], pa + a_offset[i], pb + out_offset[i], nullptr, weights[i]);
          break;
      }
    });

    if (gradient) {
      if (count > 1) {  // sum the partial gradients into the first (same layout, padding included)
        const int64_t elements = packed_size / width;  // float32: bfloat16 gradients are not split
        auto* sum = reinterpret_cast<float*>(weights[0]);
        ParallelFor(pool, count, [&](int64_t chunk) {
          const int64_t e0 = elements * chunk / count, e1 = elements * (chunk + 1) / count;
          for (int64_t i = 1; i < count; ++i) {
            const auto* part = reinterpret_cast<const float*>(weights[i]);
            for (int64_t e = e0; e < e1; ++e) sum[e] += part[e];
          }
        });
      }
      if (weights[0] != po) ReorderWeights(pool, plan.weights, weights[0], plain_weights, po);
    }
  } catch (const std::exception& e) {
    return ffi::Error::Internal(std::string("pdx oneDNN convolution: ") + e.what());
  }
  return ffi::Error::Success();
}

// ---------------------------------------------------------------------------- matmul

// c [M, N] = op(a) @ op(b), op = transpose where asked; a and b row-major as stored.
struct MatmulGeometry {
  int threads;
  memory::data_type type;
  int64_t rows, rows_total, k, n;  // this part's rows of c, all rows, the contracted and column sizes
  bool ta, tb;

  auto key() const { return std::tie(threads, type, rows, rows_total, k, n, ta, tb); }
  bool operator<(const MatmulGeometry& other) const { return key() < other.key(); }

  memory::desc A() const {  // op(a)'s rows [rows, k]: a is [rows_total, k], or [k, rows_total] when ta
    return ta ? memory::desc({rows, k}, type, memory::dims{1, rows_total})
              : memory::desc({rows, k}, type, memory::dims{k, 1});
  }
  memory::desc B() const {  // op(b) [k, n]: b is [k, n], or [n, k] when tb
    return tb ? memory::desc({k, n}, type, memory::dims{1, k}) : memory::desc({k, n}, type, memory::dims{n, 1});
  }
  memory::desc C() const { return memory::desc({rows, n}, type, memory::dims{n, 1}); }
};

struct MatmulPlan {
  dnnl::matmul primitive;
  memory::desc scratchpad;
};

const MatmulPlan& CachedMatmul(const MatmulGeometry& g) {
  return Cached<MatmulPlan>(g, [](const MatmulGeometry& g) {
    omp_set_num_threads(g.threads);
    auto pd = dnnl::matmul::primitive_desc(Engine(), g.A(), g.B(), g.C(), Attributes());
    return MatmulPlan{dnnl::matmul(pd), pd.scratchpad_desc()};
  });
}

ffi::Error Matmul(ffi::ThreadPool pool, ffi::AnyBuffer a, ffi::AnyBuffer b, ffi::Result<ffi::AnyBuffer> c,
                  int64_t transpose_a, int64_t transpose_b) {
  if (a.element_type() != b.element_type() || a.element_type() != c->element_type() ||
      (a.element_type() != ffi::DataType::F32 && a.element_type() != ffi::DataType::BF16)) {
    return ffi::Error::InvalidArgument("pdx oneDNN matmul: operands must all be float32 or bfloat16");
  }
  if (a.dimensions().size() != 2 || b.dimensions().size() != 2 || c->dimensions().size() != 2) {
    return ffi::Error::InvalidArgument("pdx oneDNN matmul: 2-D operands expected");
  }
  MatmulGeometry g;
  g.type = a.element_type() == ffi::DataType::F32 ? memory::data_type::f32 : memory::data_type::bf16;
  g.ta = transpose_a != 0, g.tb = transpose_b != 0;
  g.rows_total = c->dimensions()[0], g.n = c->dimensions()[1];
  g.k = g.ta ? a.dimensions()[0] : a.dimensions()[1];
  const int64_t width = ByteWidth(g.type);
  try {
    // Rows of c split over XLA's threads, at least 16 rows each.
    const int64_t threads = std::max<int64_t>(1, pool.num_threads());
    const int64_t count = std::max<int64_t>(1, std::min<int64_t>(threads, g.rows_total / 16));
    auto* pa = static_cast<uint8_t*>(a.untyped_data());
    auto* pb = static_cast<uint8_t*>(b.untyped_data());
    auto* pc = static_cast<uint8_t*>(c->untyped_data());
    ParallelFor(pool, count, [&](int64_t i) {
      const int64_t r0 = g.rows_total * i / count, r1 = g.rows_total * (i + 1) / count;
      MatmulGeometry part = g;
      part.rows = r1 - r0;
      part.threads = count == 1 ? threads : 1;
      omp_set_num_threads(part.threads);
      const MatmulPlan& plan = CachedMatmul(part);
      auto& engine = Engine();
      dnnl::stream& stream = ThreadStream();
      void* a_rows = pa + (g.ta ? r0 : r0 * g.k) * width;
      plan.primitive.execute(stream, {{DNNL_ARG_SRC, memory(part.A(), engine, a_rows)},
                                      {DNNL_ARG_WEIGHTS, memory(part.B(), engine, pb)},
                                      {DNNL_ARG_DST, memory(part.C(), engine, pc + r0 * g.n * width)},
                                      {DNNL_ARG_SCRATCHPAD, memory(plan.scratchpad, engine, ThreadBuffer(kScratch, plan.scratchpad.get_size()))}});
      stream.wait();
    });
  } catch (const std::exception& e) {
    return ffi::Error::Internal(std::string("pdx oneDNN matmul: ") + e.what());
  }
  return ffi::Error::Success();
}

// ---------------------------------------------------------------------------- inference matmul, kept weights

// One part of c's columns [n0, n0 + n): a [m, k] @ op(b)[:, n0:n0 + n] into a dense [m, n] block.
struct KeptMatmulGeometry {
  memory::data_type type;  // a's, and the kept weight's
  int64_t m, k, n, n_total;
  bool tb;

  auto key() const { return std::tie(type, m, k, n, n_total, tb); }
  bool operator<(const KeptMatmulGeometry& other) const { return key() < other.key(); }

  memory::desc A() const { return memory::desc({m, k}, type, memory::dims{k, 1}); }
  memory::desc PlainB() const {  // the part's columns of op(b), float32 as stored
    return tb ? memory::desc({k, n}, memory::data_type::f32, memory::dims{1, k})
              : memory::desc({k, n}, memory::data_type::f32, memory::dims{n_total, 1});
  }
  memory::desc C() const { return memory::desc({m, n}, memory::data_type::f32, memory::dims{n, 1}); }
};

struct KeptMatmulPlan {
  dnnl::matmul primitive;
  memory::desc weights, scratchpad;
};

const KeptMatmulPlan& CachedKeptMatmul(const KeptMatmulGeometry& g) {
  return Cached<KeptMatmulPlan>(g, [](const KeptMatmulGeometry& g) {
    omp_set_num_threads(1);  // each part runs on one thread
    memory::desc any_weights({g.k, g.n}, g.type, memory::format_tag::any);
    auto pd = dnnl::matmul::primitive_desc(Engine(), g.A(), any_weights, g.C(), Attributes());
    return KeptMatmulPlan{dnnl::matmul(pd), pd.weights_desc(), pd.scratchpad_desc()};
  });
}

// The part's weight in the plan's layout: kept under (token, site, part), or reordered into
// this thread's buffer for token 0.
uint8_t* KeptMatmulWeights(int64_t token, int64_t key, const memory::desc& from_md, const uint8_t* from,
                           const memory::desc& to_md) {
  auto reorder = [&](uint8_t* to) {
    memory src(from_md, Engine(), const_cast<uint8_t*>(from)), dst(to_md, Engine(), to);
    dnnl::reorder(src, dst).execute(ThreadStream(), src, dst);
    ThreadStream().wait();
  };
  if (token == 0) {
    uint8_t* to = ThreadBuffer(kWeights, to_md.get_size());
    reorder(to);
    return to;
  }
  return KeptCopy(token, key, to_md, reorder);
}

ffi::Error MatmulInference(ffi::ThreadPool pool, ffi::AnyBuffer a, ffi::AnyBuffer b, ffi::AnyBuffer token,
                           ffi::Result<ffi::AnyBuffer> c, int64_t transpose_b, int64_t site) {
  if ((a.element_type() != ffi::DataType::F32 && a.element_type() != ffi::DataType::BF16) ||
      b.element_type() != ffi::DataType::F32 || c->element_type() != ffi::DataType::F32) {
    return ffi::Error::InvalidArgument("pdx oneDNN matmul: a float32 or bfloat16, b and c float32 expected");
  }
  if (token.element_type() != ffi::DataType::S32 || token.element_count() != 1) {
    return ffi::Error::InvalidArgument("pdx oneDNN matmul: the weights token must be an int32 scalar");
  }
  if (a.dimensions().size() != 2 || b.dimensions().size() != 2 || c->dimensions().size() != 2) {
    return ffi::Error::InvalidArgument("pdx oneDNN matmul: 2-D operands expected");
  }
  KeptMatmulGeometry g;
  g.type = a.element_type() == ffi::DataType::F32 ? memory::data_type::f32 : memory::data_type::bf16;
  g.tb = transpose_b != 0;
  g.m = c->dimensions()[0], g.n_total = c->dimensions()[1], g.k = a.dimensions()[1];
  const int64_t key_token = *static_cast<const int32_t*>(token.untyped_data());
  try {
    // Columns split over XLA's threads in blocks of 64: each part reads only its columns of b.
    const int64_t blocks = (g.n_total + 63) / 64;
    const int64_t count = std::max<int64_t>(1, std::min<int64_t>({pool.num_threads(), blocks, kMaxParts - 1}));
    const auto* pa = static_cast<const uint8_t*>(a.untyped_data());
    const auto* pb = static_cast<const uint8_t*>(b.untyped_data());
    auto* pc = static_cast<float*>(c->untyped_data());
    ParallelFor(pool, count, [&](int64_t i) {
      const int64_t n0 = std::min(g.n_total, blocks * i / count * 64);
      const int64_t n1 = std::min(g.n_total, blocks * (i + 1) / count * 64);
      if (n1 == n0) return;
      KeptMatmulGeometry part = g;
      part.n = n1 - n0;
      const KeptMatmulPlan& plan = CachedKeptMatmul(part);
      const uint8_t* b_part = pb + (g.tb ? n0 * g.k : n0) * sizeof(float);
      uint8_t* weights = KeptMatmulWeights(key_token, site * kMaxParts + i + 1, part.PlainB(), b_part, plan.weights);
      auto* out = reinterpret_cast<float*>(ThreadBuffer(kPartOutput, part.m * part.n * sizeof(float)));
      auto& engine = Engine();
      plan.primitive.execute(ThreadStream(), {
          {DNNL_ARG_SRC, memory(part.A(), engine, const_cast<uint8_t*>(pa))},
          {DNNL_ARG_WEIGHTS, memory(plan.weights, engine, weights)},
          {DNNL_ARG_DST, memory(part.C(), engine, out)},
          {DNNL_ARG_SCRATCHPAD, memory(plan.scratchpad, engine, ThreadBuffer(kScratch, plan.scratchpad.get_size()))}});
      ThreadStream().wait();
      for (int64_t r = 0; r < part.m; ++r) std::memcpy(pc + r * g.n_total + n0, out + r * part.n, part.n * sizeof(float));
    });
  } catch (const std::exception& e) {
    return ffi::Error::Internal(std::string("pdx oneDNN matmul: ") + e.what());
  }
  return ffi::Error::Success();
}

ffi::Error Forward(ffi::ThreadPool pool, ffi::AnyBuffer x, ffi::AnyBuffer w, ffi::Result<ffi::AnyBuffer> y, Span strides,
                   Span dilation, Span padding_lo, Span padding_hi, int64_t groups) {
  return Run(pool, Direction::kForward, x, w, y, strides, dilation, padding_lo, padding_hi, groups);
}

ffi::Error BackwardData(ffi::ThreadPool pool, ffi::AnyBuffer dy, ffi::AnyBuffer w, ffi::Result<ffi::AnyBuffer> dx, Span strides,
                        Span dilation, Span padding_lo, Span padding_hi, int64_t groups) {
  return Run(pool, Direction::kBackwardData, dy, w, dx, strides, dilation, padding_lo, padding_hi, groups);
}

ffi::Error BackwardWeights(ffi::ThreadPool pool, ffi::AnyBuffer x, ffi::AnyBuffer dy, ffi::Result<ffi::AnyBuffer> dw, Span strides,
                           Span dilation, Span padding_lo, Span padding_hi, int64_t groups) {
  return Run(pool, Direction::kBackwardWeights, x, dy, dw, strides, dilation, padding_lo, padding_hi, groups);
}

ffi::Error Inference(ffi::ThreadPool pool, ffi::AnyBuffer x, ffi::AnyBuffer w, ffi::AnyBuffer scale,
                     ffi::AnyBuffer shift, ffi::AnyBuffer residual, ffi::AnyBuffer token,
                     ffi::Result<ffi::AnyBuffer> y, Span strides, Span dilation, Span padding_lo, Span padding_hi,
                     int64_t groups, int64_t site, int64_t has_residual, int64_t relu, float relu_max) {
  const int64_t outputs = y->dimensions().size() == 4 ? y->dimensions()[3] : -1;
  if (token.element_type() != ffi::DataType::S32 || token.element_count() != 1) {
    return ffi::Error::InvalidArgument("pdx oneDNN convolution: the weights token must be an int32 scalar");
  }
  if (scale.element_type() != ffi::DataType::F32 || shift.element_type() != ffi::DataType::F32 ||
      scale.element_count() != outputs || shift.element_count() != outputs) {
    return ffi::Error::InvalidArgument("pdx oneDNN convolution: scale and shift must be float32 [out_channels]");
  }
  if (has_residual && (residual.element_type() != y->element_type() ||
                       residual.element_count() != y->element_count())) {
    return ffi::Error::InvalidArgument("pdx oneDNN convolution: the residual must have the output's shape and dtype");
  }
  InferenceArgs args;
  args.token = *static_cast<const int32_t*>(token.untyped_data());
  args.site = site;
  args.scale = static_cast<const float*>(scale.untyped_data());
  args.shift = static_cast<const float*>(shift.untyped_data());
  args.residual = has_residual ? static_cast<const uint8_t*>(residual.untyped_data()) : nullptr;
  args.relu = relu != 0;
  args.relu_max = relu_max;
  return Run(pool, Direction::kInference, x, w, y, strides, dilation, padding_lo, padding_hi, groups, &args);
}

// ---------------------------------------------------------------------------- max pool

struct PoolGeometry {
  memory::data_type type;
  memory::dims src, dst, kernel, strides, padding_lo, padding_hi;  // src / dst logical {N, C, H, W}

  auto key() const { return std::tie(type, src, dst, kernel, strides, padding_lo, padding_hi); }
  bool operator<(const PoolGeometry& other) const { return key() < other.key(); }
};

struct PoolPlan {
  dnnl::pooling_forward primitive;
  memory::desc scratchpad;
};

const PoolPlan& CachedPool(const PoolGeometry& g) {
  return Cached<PoolPlan>(g, [](const PoolGeometry& g) {
    omp_set_num_threads(1);  // each part runs on one thread
    auto pd = dnnl::pooling_forward::primitive_desc(
        Engine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max,
        memory::desc(g.src, g.type, memory::format_tag::nhwc), memory::desc(g.dst, g.type, memory::format_tag::nhwc),
        g.strides, g.kernel, memory::dims{0, 0}, g.padding_lo, g.padding_hi, Attributes());
    return PoolPlan{dnnl::pooling_forward(pd), pd.scratchpad_desc()};
  });
}

ffi::Error MaxPool(ffi::ThreadPool pool, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y, Span kernel, Span strides,
                   Span padding_lo, Span padding_hi) {
  if (x.element_type() != y->element_type() ||
      (x.element_type() != ffi::DataType::F32 && x.element_type() != ffi::DataType::BF16)) {
    return ffi::Error::InvalidArgument("pdx oneDNN max pool: x and y must both be float32 or bfloat16");
  }
  if (x.dimensions().size() != 4 || y->dimensions().size() != 4 || kernel.size() != 2 || strides.size() != 2 ||
      padding_lo.size() != 2 || padding_hi.size() != 2) {
    return ffi::Error::InvalidArgument("pdx oneDNN max pool: 4-D operands and 2-element attributes expected");
  }
  PoolGeometry g;
  g.type = x.element_type() == ffi::DataType::F32 ? memory::data_type::f32 : memory::data_type::bf16;
  g.src = Nchw(x.dimensions()), g.dst = Nchw(y->dimensions());
  g.kernel = {kernel[0], kernel[1]}, g.strides = {strides[0], strides[1]};
  g.padding_lo = {padding_lo[0], padding_lo[1]}, g.padding_hi = {padding_hi[0], padding_hi[1]};
  try {
    const int64_t images = g.src[0];
    const size_t width = ByteWidth(g.type);
    const size_t src_image = g.src[1] * g.src[2] * g.src[3] * width, dst_image = g.dst[1] * g.dst[2] * g.dst[3] * width;
    const int64_t count = std::max<int64_t>(1, std::min<int64_t>(pool.num_threads(), images));
    const auto* px = static_cast<const uint8_t*>(x.untyped_data());
    auto* py = static_cast<uint8_t*>(y->untyped_data());
    ParallelFor(pool, count, [&](int64_t i) {
      const int64_t n0 = images * i / count, n1 = images * (i + 1) / count;
      if (n1 == n0) return;
      PoolGeometry part = g;
      part.src[0] = part.dst[0] = n1 - n0;
      const PoolPlan& plan = CachedPool(part);
      dnnl::stream& stream = ThreadStream();
      auto& engine = Engine();
      plan.primitive.execute(stream, {
          {DNNL_ARG_SRC, memory(memory::desc(part.src, part.type, memory::format_tag::nhwc), engine,
                                const_cast<uint8_t*>(px + n0 * src_image))},
          {DNNL_ARG_DST, memory(memory::desc(part.dst, part.type, memory::format_tag::nhwc), engine,
                                py + n0 * dst_image)},
          {DNNL_ARG_SCRATCHPAD, memory(plan.scratchpad, engine, ThreadBuffer(kScratch, plan.scratchpad.get_size()))}});
      stream.wait();
    });
  } catch (const std::exception& e) {
    return ffi::Error::Internal(std::string("pdx oneDNN max pool: ") + e.what());
  }
  return ffi::Error::Success();
}

// The attributes every convolution handler takes, after its operands.
template <typename Binding>
auto WithGeometry(Binding binding) {
  return std::move(binding)
      .template Attr<Span>("strides")
      .template Attr<Span>("dilation")
      .template Attr<Span>("padding_lo")
      .template Attr<Span>("padding_hi")
      .template Attr<int64_t>("groups");
}

auto Binding() {
  return WithGeometry(
      ffi::Ffi::Bind().Ctx<ffi::ThreadPool>().Arg<ffi::AnyBuffer>().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>());
}

auto InferenceBinding() {  // x, w, scale, shift, residual, token
  return WithGeometry(ffi::Ffi::Bind()
                          .Ctx<ffi::ThreadPool>()
                          .Arg<ffi::AnyBuffer>()
                          .Arg<ffi::AnyBuffer>()
                          .Arg<ffi::AnyBuffer>()
                          .Arg<ffi::AnyBuffer>()
                          .Arg<ffi::AnyBuffer>()
                          .Arg<ffi::AnyBuffer>()
                          .Ret<ffi::AnyBuffer>())
      .Attr<int64_t>("site")
      .Attr<int64_t>("residual")
      .Attr<int64_t>("relu")
      .Attr<float>("relu_max");
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(PdxConvForward, Forward, Binding());
XLA_FFI_DEFINE_HANDLER_SYMBOL(PdxConvBackwardData, BackwardData, Binding());
XLA_FFI_DEFINE_HANDLER_SYMBOL(PdxConvBackwardWeights, BackwardWeights, Binding());
XLA_FFI_DEFINE_HANDLER_SYMBOL(PdxConvInference, Inference, InferenceBinding());
XLA_FFI_DEFINE_HANDLER_SYMBOL(PdxMaxPool, MaxPool,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<Span>("kernel")
                                  .Attr<Span>("strides")
                                  .Attr<Span>("padding_lo")
                                  .Attr<Span>("padding_hi"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(PdxMatmulInference, MatmulInference,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("transpose_b")
                                  .Attr<int64_t>("site"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(PdxMatmul, Matmul,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("transpose_a")
                                  .Attr<int64_t>("transpose_b"));

// Frees the weights kept for `token` (no call with it may be running).
extern "C" void PdxForgetWeights(int64_t token) {
  std::lock_guard<std::mutex> lock(KeptMutex());
  auto& kept = Kept();
  for (auto it = kept.lower_bound({token, INT64_MIN}); it != kept.end() && it->first.first == token;) {
    it = kept.erase(it);
  }
}
