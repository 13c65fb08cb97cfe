"""Weight-only quantization for large models: int8 or int4 weights, float activations.

Paddle's `paddle.nn.quant` functions with Paddle's scale rule (per output
channel absmax / 127 for int8, / 7 for int4; with `group_size` one scale per
group of input rows). Layout differs on purpose: Paddle permutes and packs
weights for its CUDA kernels (`arch=`), pdx keeps `[out, in]` int8 codes
(Paddle's transposed shape) and packs int4 two per byte along `in` (low
nibble = even row), so the stored weight really is half the bytes.
"""

from __future__ import annotations

import re

import jax.numpy as jnp

from pdx import nn
from pdx.nn import Buffer, Layer

__all__ = ["WeightOnlyLinear", "weight_dequantize", "weight_only_linear", "weight_only_quantize", "weight_quantize"]

_ALGOS = {"weight_only_int8": 8, "weight_only_int4": 4}
_DTYPES = {"int8": 8, "int4": 4}


def _bits(algo: str) -> int:
    if algo not in _ALGOS:
        raise ValueError(f"algo={algo!r} is not supported; use one of {sorted(_ALGOS)}")
    return _ALGOS[algo]


def _check_group(group_size, rows):
    if group_size not in (-1, 64, 128) and not (isinstance(group_size, int) and group_size > 0):
        raise ValueError(f"group_size={group_size!r} must be -1 (per channel) or a positive int such as 64 or 128")
    if group_size != -1 and rows % group_size:
        raise ValueError(f"group_size={group_size} must divide the weight's {rows} input rows")


def _pack_int4(codes):
    """[out, in] int4-range int8 codes -> [out, in/2] bytes (low nibble = even input row)."""
    lo, hi = codes[:, 0::2], codes[:, 1::2]
    return ((lo & 0x0F) | (hi << 4)).astype(jnp.int8)


def _unpack_int4(packed):
    lo = (packed << 4).astype(jnp.int8) >> 4          # sign-extend the low nibble
    hi = packed.astype(jnp.int8) >> 4
    return jnp.stack([lo, hi], axis=-1).reshape(packed.shape[0], -1)


def weight_quantize(x, algo: str = "weight_only_int8", arch=None, group_size: int = -1):
    """Quantize a Linear weight `[in, out]` (Paddle's `paddle.nn.quant.weight_quantize`).

    Args:
      x: float weight [in, out].
      algo: "weight_only_int8" or "weight_only_int4".
      arch: ignored (Paddle's CUDA layout selector).
      group_size: -1 for one scale per output channel, else one per `group_size` input rows.

    Returns:
      (codes, scale): int8 codes [out, in] (int4: [out, in/2], two per byte) and float16
      scales [out] (or [in/group_size, out]); codes are rounded with the float32 scale.

    Example:
      >>> import jax.numpy as jnp
      >>> q, s = weight_quantize(jnp.ones((4, 2)))
      >>> q.shape, q.dtype, s.shape
      ((2, 4), dtype('int8'), (2,))
    """
    bits = _bits(algo)
    w = jnp.asarray(x, jnp.float32)
    if w.ndim != 2:
        raise ValueError(f"weight_quantize expects a 2-D [in, out] weight; got shape {tuple(w.shape)}")
    _check_group(group_size, w.shape[0])
    top = 2 ** (bits - 1) - 1
    if group_size == -1:
        scale = jnp.maximum(jnp.max(jnp.abs(w), axis=0), 1e-8) / top                      # [out]
        codes = jnp.clip(jnp.round(w / scale), -top, top)
    else:
        g = w.reshape(w.shape[0] // group_size, group_size, w.shape[1])
        scale = jnp.maximum(jnp.max(jnp.abs(g), axis=1), 1e-8) / top                       # [in/g, out]
        codes = jnp.clip(jnp.round(g / scale[:, None, :]), -top, top).reshape(w.shape)
    scale = scale.astype(jnp.float16)   # Paddle's scale dtype; halves the scales' share of the memory
    codes = codes.astype(jnp.int8).T                                                       # [out, in]
    if bits == 4:
        if codes.shape[1] % 2:
            raise ValueError(f"weight_only_int4 packs two input rows per byte: in={codes.shape[1]} must be even")
        codes = _pack_int4(codes)
    return codes, scale


def weight_dequantize(x, scale, algo: str = "weight_only_int8", out_dtype="float32", group_size: int = -1):
    """The float `[in, out]` weight that `weight_quantize`'s (codes, scale) stand for."""
    bits = _bits(algo)
    codes = _unpack_int4(jnp.asarray(x)) if bits == 4 else jnp.asarray(x)
    w = codes.T.astype(jnp.float32)                                                         # [in, out]
    scale = jnp.asarray(scale, jnp.float32)
    if group_size == -1:
        w = w * scale
    else:
        w = (w.reshape(-1, group_size, w.shape[1]) * scale[:, None, :]).reshape(w.shape)
    return w.astype(out_dtype)


def weight_only_linear(x, weight, bias=None, weight_scale=None, weight_dtype="int8", arch=None, group_size=-1):
    """`x @ dequantize(weight) + bias` (Paddle's `paddle.nn.quant.weight_only_linear`)."""
    if weight_dtype not in _DTYPES:
        raise ValueError(f"weight_dtype={weight_dtype!r} must be 'int8' or 'int4'")
    if weight_scale is None:
        raise ValueError("weight_only_linear needs weight_scale= (the scale weight_quantize returned)")
    x = jnp.asarray(x)
    algo = f"weight_only_int{_DTYPES[weight_dtype]}"
    w = weight_dequantize(weight, weight_scale, algo=algo, out_dtype=x.dtype, group_size=group_size)
    out = x @ w
    return out if bias is None else out + jnp.asarray(bias, out.dtype)


class WeightOnlyLinear(Layer):
    """A Linear whose weight is stored quantized (int8, or int4 packed two per byte)."""

    def __init__(self, layer, algo: str = "weight_only_int8", group_size: int = -1):
        super().__init__()
        self._algo, self._group_size = algo, group_size
        codes, scale = weight_quantize(layer.weight.get_value(), algo=algo, group_size=group_size)
        self.weight, self.weight_scale = Buffer(codes), Buffer(scale)
        self.bias = None if layer.bias is None else Buffer(layer.bias.get_value())
        self._in, self._out = layer.weight.shape

    def forward(self, input):  # noqa: A002
        bias = None if self.bias is None else self.bias.get_value()
        return weight_only_linear(input, self.weight.get_value(), bias, self.weight_scale.get_value(),
                                  weight_dtype=f"int{_ALGOS[self._algo]}", group_size=self._group_size)

    def extra_repr(self):
        return f"in_features={self._in}, out_features={self._out}, algo={self._algo}, group_size={self._group_size}"


def weight_only_quantize(model: Layer, algo: str = "weight_only_int8", group_size: int = -1,
                         include=r".*", exclude=r"lm_head|.*embed.*") -> Layer:
    """Replace the model's Linear layers (dotted names matching `include`, not `exclude`) in place.

    Args:
      model: a pdx Layer (e.g. `pdx.models.llama.LlamaForCausalLM`).
      algo: "weight_only_int8" or "weight_only_int4".
      group_size: -1 (per output channel) or e.g. 128.
      include / exclude: regular expressions over `named_sublayers()` names.

    Returns:
      The same model object, its Linear layers now `WeightOnlyLinear`.

    Example:
      >>> import pdx
      >>> net = pdx.nn.Sequential(pdx.nn.Linear(4, 4))
      >>> type(weight_only_quantize(net)[0]).__name__
      'WeightOnlyLinear'
    """
    from pdx._sublayers import set_child as _set_child
    from pdx._sublayers import walk as _walk

    _bits(algo)
    swapped = []

    def visit(parent, name, full, child):
        if isinstance(child, nn.Linear) and re.fullmatch(include, full) and not re.fullmatch(exclude, full):
            _set_child(parent, name, WeightOnlyLinear(child, algo=algo, group_size=group_size))
            swapped.append(full)
            return False
        return True

    _walk(model, "", visit)
    if not swapped:
        raise ValueError(f"weight_only_quantize: no Linear layer matched include={include!r} "
                         f"exclude={exclude!r} in {type(model).__name__}")
    return model
