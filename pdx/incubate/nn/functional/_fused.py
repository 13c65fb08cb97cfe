"""Paddle's fused transformer ops as plain jnp compositions (XLA fuses them).

Each op follows the unfused pseudo code in Paddle's docstring. Dropout inside
an op draws from the keyword-only `key=` (split once per dropout site), or
from the global generator (`pdx.seed`) when it is None; under jit pass a key.
Tensors are [batch, seq, embed] unless an op says otherwise.
"""

from __future__ import annotations

import functools
import inspect

import jax
import jax.numpy as jnp

import pdx.nn.functional as F
from pdx import _random
from pdx._args import as_array

__all__ = ["blha_get_max_len", "fast_ln", "fast_rms_norm", "fused_bias_act", "fused_bias_dropout_residual_layer_norm",
           "fused_dropout_add", "fused_feedforward", "fused_layer_norm", "fused_linear", "fused_linear_activation",
           "fused_matmul_bias", "fused_multi_head_attention", "fused_rms_norm", "fused_rms_norm_ext",
           "fused_rotary_position_embedding", "masked_multihead_attention", "swiglu",
           "variable_length_memory_efficient_attention"]

swiglu = F.swiglu  # Paddle lists it under paddle.incubate.nn.functional too

_MODES = ("upscale_in_train", "downscale_in_infer")


def _compiled(*arrays: str, rates: tuple[str, ...] = ()):
    """Run the op as one jitted function (eager calls dispatch one program, not one per jnp op).

    Arguments named in `arrays` (and `key`) are traced, the rest are static. A dropout key is
    drawn from the global generator outside the trace when the op is training with a nonzero
    rate in `rates` and no key was given.
    """
    def wrap(fn):
        sig = inspect.signature(fn)
        static = tuple(n for n in sig.parameters if n not in arrays and n != "key")
        jitted = jax.jit(fn, static_argnames=static)

        @functools.wraps(fn)
        def call(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            kw = bound.arguments
            if "key" in kw and kw["key"] is None and kw.get("training", False) and any(
                    isinstance(kw[r], (int, float)) and 0 < kw[r] < 1 for r in rates):
                kw["key"] = _random.next_key(None, op=fn.__name__)
            try:
                return jitted(**kw)
            except TypeError as e:
                if "hashable" not in str(e) and "static" not in str(e):
                    raise
                bad = [n for n in static if not _hashable(kw[n])]
                raise TypeError(f"pdx.incubate.nn.functional.{fn.__name__}: {bad} must be Python values "
                                f"(int / float / bool / str / None), not arrays") from None

        return call

    return wrap


def _hashable(v) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def _error(op: str, message: str) -> ValueError:
    return ValueError(f"pdx.incubate.nn.functional.{op}: {message}")


def _arr(x, name: str, op: str):
    return None if x is None else as_array(x, name=name, op=f"incubate.nn.functional.{op}")


def _check_rate(op: str, name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise _error(op, f"{name} must be a float in [0, 1]; got {name}={value!r}")
    return float(value)


def _check_mode(op: str, mode: str) -> str:
    if mode not in _MODES:
        raise _error(op, f"mode must be one of {_MODES}; got mode={mode!r}")
    return mode


def _dropouts(key, n: int, rates, training: bool, op: str):
    """One key per dropout site that needs one (None where it draws nothing)."""
    if not training or not any(0 < r < 1 for r in rates):
        return [None] * n
    key = _random.next_key(key, op=op)
    return list(jax.random.split(key, n))


def _dropout(x, p, training, mode, key):
    if p == 0:
        return x
    return F.dropout(x, p=p, training=training, mode=mode, key=key)


def _layer_norm(x, scale, bias, eps):
    return F.layer_norm(x, x.shape[-1:], weight=scale, bias=bias, epsilon=eps)


_ACTIVATIONS = {
    "relu": jax.nn.relu,
    "gelu": lambda x: jax.nn.gelu(x, approximate=False),
    "silu": jax.nn.silu,
    "swish": jax.nn.silu,
    "sigmoid": jax.nn.sigmoid,
    "tanh": jnp.tanh,
    "identity": lambda x: x,
}
_GATED = {"swiglu": jax.nn.silu, "geglu": lambda x: jax.nn.gelu(x, approximate=False)}


def _activation(name, op: str):
    if name not in _ACTIVATIONS:
        raise _error(op, f"activation={name!r} is not supported; choose from {sorted(_ACTIVATIONS)}")
    return _ACTIVATIONS[name]


@_compiled("x", "qkv_weight", "linear_weight", "pre_ln_scale", "pre_ln_bias", "ln_scale", "ln_bias", "qkv_bias",
           "linear_bias", "cache_kv", "attn_mask", rates=("dropout_rate", "attn_dropout_rate"))
def fused_multi_head_attention(x, qkv_weight, linear_weight, pre_layer_norm=False, pre_ln_scale=None, pre_ln_bias=None,
                               ln_scale=None, ln_bias=None, pre_ln_epsilon=1e-05, qkv_bias=None, linear_bias=None,
                               cache_kv=None, attn_mask=None, dropout_rate=0.5, attn_dropout_rate=0.5,
                               ln_epsilon=1e-05, training=True, mode="upscale_in_train", ring_id=-1,
                               add_residual=True, num_heads=-1, transpose_qkv_wb=False, name=None, *, key=None):
    """Self-attention block: [pre-LN] -> qkv -> softmax(q k^T / sqrt(d) + mask) -> out proj -> residual [-> LN].

    Args:
      x: [batch, seq, embed].
      qkv_weight: [3, num_heads, head_dim, embed] (or [embed, 3 * embed] with transpose_qkv_wb=True).
      linear_weight: [embed, embed]; linear_bias: [embed] or None.
      pre_layer_norm: LayerNorm before attention (pre_ln_scale/bias, pre_ln_epsilon) instead of after
        (ln_scale/bias, ln_epsilon).
      qkv_bias: [3, num_heads, head_dim] (or [3 * embed]) or None.
      cache_kv: [2, batch, num_heads, cache_len, head_dim] keys/values prepended to this step's; the
        updated cache is returned too.
      attn_mask: additive float mask broadcastable to [batch, num_heads, seq, seq + cache_len].
      dropout_rate, attn_dropout_rate: dropout after the output projection / on attention weights.
      training, mode: dropout behaviour (Paddle's `upscale_in_train` / `downscale_in_infer`).
      ring_id: ignored (tensor parallelism comes from sharding, pdx.parallel).
      add_residual: add x back before the post-LN.
      num_heads: needed with transpose_qkv_wb=True.
      key: keyword-only PRNG key for the two dropouts (None: the global generator).

    Returns:
      [batch, seq, embed], or (out, new cache_kv) when cache_kv is given.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import functional as IF
      >>> x = jnp.ones((2, 4, 8))
      >>> IF.fused_multi_head_attention(x, jnp.zeros((3, 2, 4, 8)), jnp.eye(8), training=False).shape
      (2, 4, 8)
    """
    op = "fused_multi_head_attention"
    x = _arr(x, "x", op)
    qkv_weight, linear_weight = _arr(qkv_weight, "qkv_weight", op), _arr(linear_weight, "linear_weight", op)
    dropout_rate, attn_dropout_rate = _check_rate(op, "dropout_rate", dropout_rate), _check_rate(
        op, "attn_dropout_rate", attn_dropout_rate)
    mode = _check_mode(op, mode)
    if x.ndim != 3:
        raise _error(op, f"x must be [batch, seq, embed]; got x.shape={tuple(x.shape)}")
    b, s, e = x.shape
    if transpose_qkv_wb:
        if num_heads <= 0 or qkv_weight.shape[-1] % (3 * num_heads):
            raise _error(op, f"transpose_qkv_wb=True needs num_heads > 0 dividing qkv_weight.shape[-1] / 3; got "
                             f"num_heads={num_heads}, qkv_weight.shape={tuple(qkv_weight.shape)}")
        head_dim = qkv_weight.shape[-1] // (3 * num_heads)
        qkv_weight = qkv_weight.reshape(e, 3, num_heads, head_dim).transpose(1, 2, 3, 0)
        if qkv_bias is not None:
            qkv_bias = _arr(qkv_bias, "qkv_bias", op).reshape(3, num_heads, head_dim)
    if qkv_weight.ndim != 4 or qkv_weight.shape[0] != 3 or qkv_weight.shape[-1] != e:
        raise _error(op, f"qkv_weight must be [3, num_heads, head_dim, {e}]; got qkv_weight.shape={tuple(qkv_weight.shape)}")
    _, h, d, _ = qkv_weight.shape
    k_attn, k_out = _dropouts(key, 2, (attn_dropout_rate, dropout_rate), training, op)
    residual = x
    out = _layer_norm(x, pre_ln_scale, pre_ln_bias, pre_ln_epsilon) if pre_layer_norm else x
    qkv = jnp.einsum("bse,thde->tbhsd", out, qkv_weight)                                   # (3, B, H, S, D)
    if qkv_bias is not None:
        qkv = qkv + _arr(qkv_bias, "qkv_bias", op).reshape(3, 1, h, 1, d)
    q, k, v = qkv[0], qkv[1], qkv[2]
    new_cache = None
    if cache_kv is not None:
        cache_kv = _arr(cache_kv, "cache_kv", op)
        k = jnp.concatenate([cache_kv[0], k], axis=2)
        v = jnp.concatenate([cache_kv[1], v], axis=2)
        new_cache = jnp.stack([k, v])
    logits = jnp.einsum("bhqd,bhkd->bhqk", q * (d ** -0.5), k)
    if attn_mask is not None:
        logits = logits + _arr(attn_mask, "attn_mask", op).astype(logits.dtype)
    weights = _dropout(jax.nn.softmax(logits, axis=-1), attn_dropout_rate, training, mode, k_attn)
    ctx = jnp.einsum("bhqk,bhkd->bqhd", weights, v).reshape(b, s, h * d)
    out = ctx @ linear_weight
    if linear_bias is not None:
        out = out + _arr(linear_bias, "linear_bias", op)
    out = _dropout(out, dropout_rate, training, mode, k_out)
    if add_residual:
        out = residual + out
    if not pre_layer_norm:
        out = _layer_norm(out, ln_scale, ln_bias, ln_epsilon)
    return out if new_cache is None else (out, new_cache)


@_compiled("x", "linear1_weight", "linear2_weight", "linear1_bias", "linear2_bias", "ln1_scale", "ln1_bias",
           "ln2_scale", "ln2_bias", rates=("dropout1_rate", "dropout2_rate"))
def fused_feedforward(x, linear1_weight, linear2_weight, linear1_bias=None, linear2_bias=None, ln1_scale=None,
                      ln1_bias=None, ln2_scale=None, ln2_bias=None, dropout1_rate=0.5, dropout2_rate=0.5,
                      activation="relu", ln1_epsilon=1e-5, ln2_epsilon=1e-5, pre_layer_norm=False, training=True,
                      mode="upscale_in_train", ring_id=-1, add_residual=True, name=None, *, key=None):
    """Transformer FFN block: [LN1] -> linear1 -> act -> dropout1 -> linear2 -> dropout2 -> residual [-> LN2].

    Args:
      x: [..., d_model]; linear1_weight [d_model, dim_ff]; linear2_weight [dim_ff, d_model]; biases optional.
      ln1_scale/ln1_bias: the pre-LN (pre_layer_norm=True); ln2_scale/ln2_bias: the post-LN.
      dropout1_rate: after the activation; dropout2_rate: after linear2.
      activation: 'relu', 'gelu', 'silu', ... (see the error for the list).
      ring_id: ignored; key: keyword-only PRNG key for the dropouts.

    Returns:
      Shaped like x.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import functional as IF
      >>> IF.fused_feedforward(jnp.ones((2, 8)), jnp.ones((8, 16)), jnp.ones((16, 8)), training=False).shape
      (2, 8)
    """
    op = "fused_feedforward"
    x = _arr(x, "x", op)
    act = _activation(activation, op)
    r1, r2 = _check_rate(op, "dropout1_rate", dropout1_rate), _check_rate(op, "dropout2_rate", dropout2_rate)
    mode = _check_mode(op, mode)
    k1, k2 = _dropouts(key, 2, (r1, r2), training, op)
    out = _layer_norm(x, ln1_scale, ln1_bias, ln1_epsilon) if pre_layer_norm else x
    out = F.linear(out, _arr(linear1_weight, "linear1_weight", op), _arr(linear1_bias, "linear1_bias", op))
    out = _dropout(act(out), r1, training, mode, k1)
    out = F.linear(out, _arr(linear2_weight, "linear2_weight", op), _arr(linear2_bias, "linear2_bias", op))
    out = _dropout(out, r2, training, mode, k2)
    if add_residual:
        out = x + out
    if not pre_layer_norm:
        out = _layer_norm(out, ln2_scale, ln2_bias, ln2_epsilon)
    return out


@_compiled("x", "residual", "bias", "ln_scale", "ln_bias", rates=("dropout_rate",))
def fused_bias_dropout_residual_layer_norm(x, residual, bias=None, ln_scale=None, ln_bias=None, dropout_rate=0.5,
                                           ln_epsilon=1e-5, training=True, mode="upscale_in_train", name=None, *,
                                           key=None):
    """layer_norm(residual + dropout(bias + x)) over the last axis.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import functional as IF
      >>> IF.fused_bias_dropout_residual_layer_norm(jnp.ones((2, 4)), jnp.zeros((2, 4)), training=False).tolist()
      [[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
    """
    op = "fused_bias_dropout_residual_layer_norm"
    x, residual = _arr(x, "x", op), _arr(residual, "residual", op)
    if tuple(x.shape) != tuple(residual.shape):
        raise _error(op, f"x.shape={tuple(x.shape)} and residual.shape={tuple(residual.shape)} must be equal")
    p = _check_rate(op, "dropout_rate", dropout_rate)
    mode = _check_mode(op, mode)
    (k,) = _dropouts(key, 1, (p,), training, op)
    out = x if bias is None else x + _arr(bias, "bias", op)
    return _layer_norm(residual + _dropout(out, p, training, mode, k), ln_scale, ln_bias, ln_epsilon)


@_compiled("x", "y", rates=("p",))
def fused_dropout_add(x, y, p=0.5, training=True, mode="upscale_in_train", name=None, *, key=None):
    """dropout(x) + y.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import functional as IF
      >>> IF.fused_dropout_add(jnp.ones(3), jnp.ones(3), p=0.5, training=False).tolist()
      [2.0, 2.0, 2.0]
    """
    op = "fused_dropout_add"
    x, y = _arr(x, "x", op), _arr(y, "y", op)
    p = _check_rate(op, "p", p)
    mode = _check_mode(op, mode)
    (k,) = _dropouts(key, 1, (p,), training, op)
    if not training or p == 0:
        return (x * (1 - p) if mode == "downscale_in_infer" else x) + y
    return F.dropout(x, p=p, training=True, mode=mode, key=k) + y


def fused_matmul_bias(x, y, bias=None, transpose_x=False, transpose_y=False, name=None):
    """matmul(x, y) + bias, with optional transposes of the last two axes.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import functional as IF
      >>> IF.fused_matmul_bias(jnp.ones((2, 3)), jnp.ones((3, 4)), jnp.ones(4)).tolist()[0]
      [4.0, 4.0, 4.0, 4.0]
    """
    op = "fused_matmul_bias"
    x, y = _arr(x, "x", op), _arr(y, "y", op)
    if transpose_x:
        x = jnp.swapaxes(x, -1, -2)
    if transpose_y:
        y = jnp.swapaxes(y, -1, -2)
    if x.shape[-1] != y.shape[-2 if y.ndim > 1 else 0]:
        raise _error(op, f"x.shape={tuple(x.shape)} and y.shape={tuple(y.shape)} do not agree on the contracted "
                         f"dim (transpose_x={transpose_x}, transpose_y={transpose_y})")
    out = x @ y
    return out if bias is None else out + _arr(bias, "bias", op)


def fused_linear(x, weight, bias=None, transpose_weight=False, name=None):
    """x @ weight + bias; `transpose_weight=True` takes weight as [out, in].

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import functional as IF
      >>> IF.fused_linear(jnp.ones((2, 3)), jnp.ones((4, 3)), transpose_weight=True).shape
      (2, 4)
    """
    return fused_matmul_bias(x, weight, bias, False, transpose_weight, name)


def fused_linear_activation(x, y, bias, trans_x=False, trans_y=False, activation=None):
    """activation(matmul(x, y) + bias); activation None / 'none', 'relu' or 'gelu'.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import functional as IF
      >>> IF.fused_linear_activation(jnp.ones((1, 2)), -jnp.ones((2, 2)), jnp.zeros(2), activation="relu").tolist()
      [[0.0, 0.0]]
    """
    op = "fused_linear_activation"
    if activation not in (None, "none", "relu", "gelu"):
        raise _error(op, f"activation must be None, 'none', 'relu' or 'gelu'; got activation={activation!r}")
    out = fused_matmul_bias(x, y, bias, trans_x, trans_y)
    if activation == "relu":
        return jax.nn.relu(out)
    if activation == "gelu":
        # Paddle's fused_gemm_epilogue GELU is the tanh approximation
        return jax.nn.gelu(out, approximate=True)
    return out


def _pre_norm_sum(x, bias, residual, residual_alpha, op):
    out = x if bias is None else x + _arr(bias, "bias", op)
    if residual is not None:
        out = out + residual_alpha * _arr(residual, "residual", op)
    return out


def _check_axis(op: str, x, begin_norm_axis) -> int:
    axis = begin_norm_axis + x.ndim if begin_norm_axis < 0 else begin_norm_axis
    if not 0 <= axis < x.ndim:
        raise _error(op, f"begin_norm_axis={begin_norm_axis} is out of range for x.ndim={x.ndim}")
    return axis


def _no_quant(op: str, quant_scale) -> None:
    if quant_scale is not None and quant_scale > 0:
        raise NotImplementedError(f"pdx.incubate.nn.functional.{op}: int8 output quantization (quant_scale="
                                  f"{quant_scale}) is not provided; quantize with pdx.quantization")


@_compiled("x", "norm_weight", "norm_bias", "bias", "residual")
def fused_rms_norm(x, norm_weight, norm_bias, epsilon, begin_norm_axis=1, bias=None, residual=None, quant_scale=-1,
                   quant_round_type=0, quant_max_bound=0, quant_min_bound=0):
    """RMSNorm over axes [begin_norm_axis:] of (x + bias + residual), times norm_weight plus norm_bias.

    Returns:
      (out, residual_out, inv_var): residual_out is x + bias + residual (the new residual stream),
      inv_var is 1 / sqrt(mean(square) + epsilon) per normalized row (float32).

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import functional as IF
      >>> out, _, _ = IF.fused_rms_norm(jnp.full((2, 4), 2.0), jnp.ones(4), None, 1e-6)
      >>> [round(v, 4) for v in out[0].tolist()]
      [1.0, 1.0, 1.0, 1.0]
    """
    op = "fused_rms_norm"
    _no_quant(op, quant_scale)
    x = _arr(x, "x", op)
    axis = _check_axis(op, x, begin_norm_axis)
    h = _pre_norm_sum(x, bias, residual, 1.0, op)
    hf = h.astype(jnp.float32)
    axes = tuple(range(axis, x.ndim))
    inv_var = jax.lax.rsqrt(jnp.mean(hf * hf, axis=axes, keepdims=True) + epsilon)
    out = hf * inv_var
    norm_shape = x.shape[axis:]
    if norm_weight is not None:
        out = out * _arr(norm_weight, "norm_weight", op).reshape(norm_shape)
    if norm_bias is not None:
        out = out + _arr(norm_bias, "norm_bias", op).reshape(norm_shape)
    return out.astype(x.dtype), h, inv_var.reshape(x.shape[:axis])


@_compiled("x", "norm_weight", "norm_bias", "bias", "residual")
def fused_layer_norm(x, norm_weight, norm_bias, epsilon, residual_alpha=1.0, begin_norm_axis=1, bias=None,
                     residual=None, quant_scale=-1, quant_round_type=0, quant_max_bound=0, quant_min_bound=0):
    """LayerNorm over axes [begin_norm_axis:] of (x + bias + residual_alpha * residual).

    With norm_weight and norm_bias both None, returns the sum itself (Paddle's rule).

    Returns:
      (out, residual_out, mean, variance), or the fused sum when there is no norm weight/bias.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import functional as IF
      >>> out = IF.fused_layer_norm(jnp.arange(4.0)[None], jnp.ones(4), jnp.zeros(4), 1e-5)[0]
      >>> round(float(out.sum()), 4)
      0.0
    """
    op = "fused_layer_norm"
    _no_quant(op, quant_scale)
    x = _arr(x, "x", op)
    axis = _check_axis(op, x, begin_norm_axis)
    h = _pre_norm_sum(x, bias, residual, residual_alpha, op)
    if norm_weight is None and norm_bias is None:
        return h
    hf = h.astype(jnp.float32)
    axes = tuple(range(axis, x.ndim))
    mean = jnp.mean(hf, axis=axes, keepdims=True)
    var = jnp.mean(jnp.square(hf - mean), axis=axes, keepdims=True)
    out = (hf - mean) * jax.lax.rsqrt(var + epsilon)
    norm_shape = x.shape[axis:]
    if norm_weight is not None:
        out = out * _arr(norm_weight, "norm_weight", op).reshape(norm_shape)
    if norm_bias is not None:
        out = out + _arr(norm_bias, "norm_bias", op).reshape(norm_shape)
    return out.astype(x.dtype), h, mean.reshape(x.shape[:axis]), var.reshape(x.shape[:axis])


def fast_ln(x, scale, bias, epsilon=1e-05):
    """LayerNorm over the last axis: (out, mean, invvar).

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import functional as IF
      >>> IF.fast_ln(jnp.ones((2, 4)), jnp.ones(4), jnp.zeros(4))[0].shape
      (2, 4)
    """
    out, _, mean, var = fused_layer_norm(x, scale, bias, epsilon, begin_norm_axis=-1)
    return out, mean, jax.lax.rsqrt(var + epsilon)


def fast_rms_norm(x, scale, epsilon=1e-05):
    """RMSNorm over the last axis: (out, invvar).

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import functional as IF
      >>> IF.fast_rms_norm(jnp.ones((2, 4)), jnp.ones(4))[0].shape
      (2, 4)
    """
    out, _, inv_var = fused_rms_norm(x, scale, None, epsilon, begin_norm_axis=-1)
    return out, inv_var


def fused_rms_norm_ext(x, scale, epsilon=1e-05, name=None):
    """RMSNorm over the last axis: (out, invvar) (Paddle's fused_rms_norm_ext).

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import functional as IF
      >>> IF.fused_rms_norm_ext(jnp.ones((2, 4)), jnp.ones(4))[1].shape
      (2,)
    """
    return fast_rms_norm(x, scale, epsilon)


@_compiled("x", "bias", "dequant_scales", "shift", "smooth")
def fused_bias_act(x, bias=None, dequant_scales=None, shift=None, smooth=None, act_method="gelu",
                   compute_dtype="default", quant_scale=-1, quant_round_type=0, quant_max_bound=0, quant_min_bound=0):
    """act((x + bias + shift) * smooth); 'swiglu' / 'geglu' gate the first half of the last axis by the second.

    Args:
      x: [..., n] (or [..., 2n] for the gated methods).
      bias, shift, smooth: optional, broadcast over the last axis.
      act_method: 'gelu', 'relu', 'silu'/'swish', 'sigmoid', 'tanh', 'identity', 'swiglu', 'geglu'.
      dequant_scales, quant_*: int8 paths, not provided (raise when given).

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import functional as IF
      >>> IF.fused_bias_act(jnp.ones((2, 8)), act_method="swiglu").shape
      (2, 4)
    """
    op = "fused_bias_act"
    _no_quant(op, quant_scale)
    if dequant_scales is not None:
        raise NotImplementedError(f"pdx.incubate.nn.functional.{op}: dequant_scales (int32 input dequantization) is "
                                  "not provided; quantize with pdx.quantization")
    x = _arr(x, "x", op)
    out = x if bias is None else x + _arr(bias, "bias", op)
    if shift is not None:
        out = out + _arr(shift, "shift", op)
    if smooth is not None:
        out = out * _arr(smooth, "smooth", op)
    if act_method in _GATED:
        if out.shape[-1] % 2:
            raise _error(op, f"act_method={act_method!r} needs an even last dim; got x.shape={tuple(x.shape)}")
        a, b = jnp.split(out, 2, axis=-1)
        return (_GATED[act_method](a) * b).astype(x.dtype)
    if act_method not in _ACTIVATIONS:
        raise _error(op, f"act_method={act_method!r} is not supported; choose from {sorted({*_ACTIVATIONS, *_GATED})}")
    return _ACTIVATIONS[act_method](out).astype(x.dtype)


def _rotary_tables(seq_len: int, head_dim: int, base: float, every_two: bool):
    inv_freq = 1.0 / (base ** (jnp.arange(0, head_dim, 2, dtype=jnp.float32) / head_dim))
    angles = jnp.arange(seq_len, dtype=jnp.float32)[:, None] * inv_freq[None, :]       # (S, D/2)
    if every_two:
        angles = jnp.repeat(angles, 2, axis=-1)                                           # a0 a0 a1 a1 ...
    else:
        angles = jnp.concatenate([angles, angles], axis=-1)                               # a0 a1 ... a0 a1 ...
    return jnp.sin(angles), jnp.cos(angles)


def _rotate(x, every_two: bool):
    if every_two:
        return jnp.stack([-x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)
    half = x.shape[-1] // 2
    return jnp.concatenate([-x[..., half:], x[..., :half]], axis=-1)


@_compiled("q", "k", "v", "sin", "cos", "position_ids")
def fused_rotary_position_embedding(q, k=None, v=None, sin=None, cos=None, position_ids=None,
                                    use_neox_rotary_style=True, time_major=False, rotary_emb_base=10000.0):
    """Rotary position embedding of q (and k, v): x * cos + rotate(x) * sin.

    Args:
      q, k, v: [batch, seq, heads, head_dim] ([seq, batch, ...] with time_major=True); k and v optional.
      sin, cos: [seq, head_dim] or [1, seq, 1, head_dim]; None computes them from rotary_emb_base.
      position_ids: [batch, seq] int rows of sin/cos to use per token (default 0..seq-1).
      use_neox_rotary_style: True rotates adjacent pairs (x0, x1), (x2, x3), ...; False rotates the
        front half against the back half (the rotate-half convention of pdx.models.llama).
      rotary_emb_base: the frequency base when sin/cos are computed.

    Returns:
      (out_q, out_k, out_v), None where the input was None.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import functional as IF
      >>> q = jnp.ones((1, 3, 2, 4))
      >>> IF.fused_rotary_position_embedding(q)[0][0, 0].tolist() == q[0, 0].tolist()   # position 0 is unrotated
      True
    """
    op = "fused_rotary_position_embedding"
    q = _arr(q, "q", op)
    if q.ndim != 4 or q.shape[-1] % 2:
        raise _error(op, f"q must be 4-D with an even head_dim; got q.shape={tuple(q.shape)}")
    seq_axis = 0 if time_major else 1
    s, d = q.shape[seq_axis], q.shape[-1]
    every_two = bool(use_neox_rotary_style)
    if (sin is None) != (cos is None):
        raise _error(op, "sin and cos must be given together (or both None)")
    if sin is None:
        sin, cos = _rotary_tables(s, d, float(rotary_emb_base), every_two)
    else:
        sin, cos = _arr(sin, "sin", op), _arr(cos, "cos", op)
        if sin.shape[-1] != d or sin.size % d:
            raise _error(op, f"sin/cos must be [seq, {d}] or [1, seq, 1, {d}]; got sin.shape={tuple(sin.shape)}")
        sin, cos = sin.reshape(-1, d), cos.reshape(-1, d)
    if position_ids is not None:
        ids = _arr(position_ids, "position_ids", op)
        sin, cos = sin[ids][:, :, None, :], cos[ids][:, :, None, :]                        # (B, S, 1, D)
        if time_major:
            sin, cos = jnp.swapaxes(sin, 0, 1), jnp.swapaxes(cos, 0, 1)
    else:
        sin, cos = sin[:s], cos[:s]
        shape = (s, 1, 1, d) if time_major else (1, s, 1, d)
        sin, cos = sin.reshape(shape), cos.reshape(shape)

    def rope(x, name):
        if x is None:
            return None
        x = _arr(x, name, op)
        if tuple(x.shape[:2]) != tuple(q.shape[:2]) or x.shape[-1] != d:
            raise _error(op, f"{name}.shape={tuple(x.shape)} must match q.shape={tuple(q.shape)} in batch, seq and head_dim")
        xf = x.astype(jnp.float32)
        return (xf * cos + _rotate(xf, every_two) * sin).astype(x.dtype)

    return rope(q, "q"), rope(k, "k"), rope(v, "v")


@_compiled("query", "key", "value", "seq_lens", "kv_seq_lens", "mask")
def variable_length_memory_efficient_attention(query, key, value, seq_lens, kv_seq_lens, mask=None, scale=None,
                                               causal=False, pre_cache_length=0):
    """Attention over padded batches of different lengths: [batch, heads, seq, head_dim] tensors.

    Query rows past `seq_lens[b]` and key columns past `kv_seq_lens[b]` are masked out (padded query rows
    come out 0). `causal` lets query i see keys j <= i + pre_cache_length. Key/value heads may be fewer than
    query heads (grouped-query attention).

    Args:
      query: [B, H, Sq, D]; key, value: [B, Hk, Sk, D].
      seq_lens, kv_seq_lens: [B] or [B, 1] int lengths.
      mask: optional additive float mask broadcastable to [B, H, Sq, Sk].
      scale: logit scale (default 1/sqrt(D)).

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import functional as IF
      >>> q = jnp.ones((2, 2, 4, 8)); n = jnp.array([[4], [2]])
      >>> IF.variable_length_memory_efficient_attention(q, q, q, n, n).shape
      (2, 2, 4, 8)
    """
    op = "variable_length_memory_efficient_attention"
    q, k, v = _arr(query, "query", op), _arr(key, "key", op), _arr(value, "value", op)
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise _error(op, f"query/key/value must be [batch, heads, seq, head_dim]; got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    b, h, sq, d = q.shape
    hk, sk = k.shape[1], k.shape[2]
    if h % hk:
        raise _error(op, f"key heads {hk} must divide query heads {h}")
    if hk != h:
        k, v = jnp.repeat(k, h // hk, axis=1), jnp.repeat(v, h // hk, axis=1)
    scale = d ** -0.5 if scale is None else scale
    qlen = _arr(seq_lens, "seq_lens", op).reshape(b)
    klen = _arr(kv_seq_lens, "kv_seq_lens", op).reshape(b)
    logits = jnp.einsum("bhqd,bhkd->bhqk", q.astype(jnp.float32), k.astype(jnp.float32)) * scale
    if mask is not None:
        logits = logits + _arr(mask, "mask", op).astype(jnp.float32)
    rows, cols = jnp.arange(sq), jnp.arange(sk)
    keep = cols[None, None, None, :] < klen[:, None, None, None]
    if causal:
        keep = keep & (cols[None, None, None, :] <= rows[None, None, :, None] + pre_cache_length)
    logits = jnp.where(keep, logits, -jnp.inf)
    weights = jax.nn.softmax(logits, axis=-1)
    weights = jnp.where(jnp.isnan(weights), 0.0, weights)
    out = jnp.einsum("bhqk,bhkd->bhqd", weights, v.astype(jnp.float32))
    valid = rows[None, None, :, None] < qlen[:, None, None, None]
    return jnp.where(valid, out, 0.0).astype(q.dtype)


@_compiled("x", "cache_kv", "bias", "src_mask", "cum_offsets", "sequence_lengths", "rotary_tensor",
           "beam_cache_offset", "qkv_out_scale", "out_shift", "out_smooth")
def masked_multihead_attention(x, cache_kv=None, bias=None, src_mask=None, cum_offsets=None, sequence_lengths=None,
                               rotary_tensor=None, beam_cache_offset=None, qkv_out_scale=None, out_shift=None,
                               out_smooth=None, seq_len=1, rotary_emb_dims=0, use_neox_rotary_style=False,
                               compute_dtype="default", out_scale=-1, quant_round_type=1, quant_max_bound=127.0,
                               quant_min_bound=-127.0):
    """One decoding step of self-attention against a key/value cache.

    Args:
      x: [batch, 3 * num_heads * head_dim] this step's fused q, k, v.
      cache_kv: [2, batch, num_heads, max_seq_len, head_dim]; this step's k/v are written at position
        `sequence_lengths[b]` (without sequence_lengths: at `seq_len - 1` in every row).
      bias: optional [3 * num_heads * head_dim] added to x.
      src_mask: optional additive mask [batch, 1, 1, max_seq_len + 1] (its first `len + 1` columns are used).
      sequence_lengths: [batch] or [batch, 1] int: how many cached positions each row has.
      rotary_tensor: optional [2, batch, 1, 1, head_dim] cos / sin applied to q and k
        (rotary_emb_dims > 0; use_neox_rotary_style as in fused_rotary_position_embedding, inverted:
        False rotates adjacent pairs, as Paddle's kernel does).
      seq_len: the step index when sequence_lengths is None.
      beam_cache_offset, cum_offsets, qkv_out_scale, out_shift, out_smooth, quant_*: the beam-search and int8
        paths, not provided (raise when given).

    Returns:
      (out [batch, num_heads * head_dim], updated cache_kv).

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import functional as IF
      >>> cache = jnp.zeros((2, 1, 2, 5, 4))
      >>> out, cache = IF.masked_multihead_attention(jnp.ones((1, 24)), cache, sequence_lengths=jnp.array([0]))
      >>> out.shape, cache.shape
      ((1, 8), (2, 1, 2, 5, 4))
    """
    op = "masked_multihead_attention"
    for name, value in (("beam_cache_offset", beam_cache_offset), ("cum_offsets", cum_offsets),
                        ("qkv_out_scale", qkv_out_scale), ("out_shift", out_shift), ("out_smooth", out_smooth)):
        if value is not None:
            raise NotImplementedError(f"pdx.incubate.nn.functional.{op}: {name} (beam-search / int8 paths of the GPU "
                                      "kernel) is not provided")
    if out_scale is not None and out_scale > 0:
        raise NotImplementedError(f"pdx.incubate.nn.functional.{op}: out_scale (int8 output) is not provided")
    if cache_kv is None:
        raise _error(op, "cache_kv is required: [2, batch, num_heads, max_seq_len, head_dim]")
    x, cache = _arr(x, "x", op), _arr(cache_kv, "cache_kv", op)
    _, b, h, max_len, d = cache.shape
    if x.shape != (b, 3 * h * d):
        raise _error(op, f"x must be [batch, 3 * num_heads * head_dim] = {(b, 3 * h * d)} for cache_kv.shape="
                         f"{tuple(cache.shape)}; got x.shape={tuple(x.shape)}")
    if bias is not None:
        x = x + _arr(bias, "bias", op).reshape(-1)
    qkv = x.reshape(b, 3, h, d).astype(jnp.float32)
    q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]                                              # (B, H, D)
    if rotary_tensor is not None and rotary_emb_dims > 0:
        rot = _arr(rotary_tensor, "rotary_tensor", op).astype(jnp.float32).reshape(2, b, 1, d)
        cos, sin = rot[0], rot[1]
        every_two = not use_neox_rotary_style
        q = q * cos + _rotate(q, every_two) * sin
        k = k * cos + _rotate(k, every_two) * sin
    if sequence_lengths is None:
        lengths = jnp.full((b,), seq_len - 1, jnp.int32)
    else:
        lengths = _arr(sequence_lengths, "sequence_lengths", op).reshape(b).astype(jnp.int32)
    pos = jnp.arange(max_len)
    at = pos[None, :] == lengths[:, None]                                                  # (B, T)
    new_k = jnp.where(at[:, None, :, None], k[:, :, None, :], cache[0].astype(jnp.float32))
    new_v = jnp.where(at[:, None, :, None], v[:, :, None, :], cache[1].astype(jnp.float32))
    logits = jnp.einsum("bhd,bhtd->bht", q, new_k) * (d ** -0.5)
    if src_mask is not None:
        m = _arr(src_mask, "src_mask", op).astype(jnp.float32).reshape(b, 1, -1)
        logits = logits + m[..., :max_len]
    logits = jnp.where((pos[None, :] <= lengths[:, None])[:, None, :], logits, -jnp.inf)
    out = jnp.einsum("bht,bhtd->bhd", jax.nn.softmax(logits, axis=-1), new_v).reshape(b, h * d)
    return out.astype(x.dtype), jnp.stack([new_k, new_v]).astype(cache.dtype)


def blha_get_max_len(seq_lens_encoder, seq_lens_decoder, batch_size):
    """(max encoder length, max decoder length) over the first `batch_size` rows, as [1] int tensors.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import functional as IF
      >>> [int(t[0]) for t in IF.blha_get_max_len(jnp.array([3, 5]), jnp.array([0, 2]), jnp.ones(2))]
      [5, 2]
    """
    op = "blha_get_max_len"
    enc, dec = _arr(seq_lens_encoder, "seq_lens_encoder", op), _arr(seq_lens_decoder, "seq_lens_decoder", op)
    n = _arr(batch_size, "batch_size", op).shape[0]
    return jnp.max(enc.reshape(-1)[:n]).reshape(1), jnp.max(dec.reshape(-1)[:n]).reshape(1)
