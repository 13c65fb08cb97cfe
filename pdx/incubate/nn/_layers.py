"""Paddle's fused layers (`paddle.incubate.nn`) over the jnp compositions in `functional`.

Parameter names and shapes are Paddle's (`qkv_weight` [3, heads, head_dim, embed],
`linear_weight`, `_linear1_weight`, `ln_scale`, ...), so
`layer.set_state_dict(paddle_layer.state_dict())` copies weights over. Layers
with dropout keep their key in a parameter-free `nn.Dropout` sublayer (`rng`),
so masks differ per call eagerly and inside a compiled step alike; it adds no
`state_dict` entries.
"""

from __future__ import annotations

import jax

from pdx import nn
from pdx.incubate.nn import functional as IF
from pdx.nn import axes
from pdx.nn.initializer import Constant

__all__ = ["FusedBiasDropoutResidualLayerNorm", "FusedDropoutAdd", "FusedFeedForward", "FusedLinear",
           "FusedMultiHeadAttention", "FusedTransformerEncoderLayer"]


_FFN_ACTIVATIONS = ("relu", "gelu", "silu", "swish", "sigmoid", "tanh", "identity")


def _error(layer: str, message: str) -> ValueError:
    return ValueError(f"pdx.incubate.nn.{layer}: {message}")


def _positive(layer: str, name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise _error(layer, f"{name} must be a positive int; got {name}={value!r}")
    return value


def _rate(layer: str, name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise _error(layer, f"{name} must be a float in [0, 1]; got {name}={value!r}")
    return float(value)


def _single_rank(layer: str, nranks) -> None:
    if nranks != 1:
        raise _error(layer, f"nranks={nranks}: tensor parallelism comes from sharding the parameters by their logical "
                            "axis names (pdx.parallel / fleet.meta_parallel), not from nranks; build with nranks=1")


class _KeyedLayer(nn.Layer):
    """A layer whose dropouts draw from the key of its `rng` sublayer."""

    def _init_key(self, rngs) -> None:
        self.rng = nn.Dropout(0.5, rngs=rngs)  # parameter-free; only its key is used

    def _key(self, *rates):
        if not self.training or not any(0 < r < 1 for r in rates):
            return None
        key, sub = jax.random.split(self.rng.rng.get_value())
        self.rng.rng.set_value(key)
        return sub


class FusedBiasDropoutResidualLayerNorm(_KeyedLayer):
    """layer_norm(residual + dropout(x + linear_bias)) (Paddle's `incubate.nn.FusedBiasDropoutResidualLayerNorm`).

    Parameters: `linear_bias` [embed_dim], `ln_scale` [embed_dim] (ones), `ln_bias` [embed_dim].

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import FusedBiasDropoutResidualLayerNorm
      >>> layer = FusedBiasDropoutResidualLayerNorm(8, dropout_rate=0.0)
      >>> layer(jnp.ones((2, 4, 8)), jnp.ones((2, 4, 8))).shape
      (2, 4, 8)
    """

    def __init__(self, embed_dim, dropout_rate=0.5, weight_attr=None, bias_attr=None, epsilon=1e-5, name=None, *,
                 rngs=None):
        super().__init__()
        layer = "FusedBiasDropoutResidualLayerNorm"
        self.embed_dim = _positive(layer, "embed_dim", embed_dim)
        self.dropout_rate = _rate(layer, "dropout_rate", dropout_rate)
        self._epsilon = float(epsilon)
        self.linear_bias = self.create_parameter([embed_dim], attr=bias_attr, is_bias=True, axis_names=(axes.EMBED,),
                                                 rngs=rngs)
        self.ln_scale = self.create_parameter([embed_dim], attr=weight_attr, default_initializer=Constant(1.0),
                                              axis_names=(axes.NORM,), rngs=rngs)
        self.ln_bias = self.create_parameter([embed_dim], attr=bias_attr, is_bias=True, axis_names=(axes.NORM,),
                                             rngs=rngs)
        self._init_key(rngs)

    def forward(self, x, residual):
        return IF.fused_bias_dropout_residual_layer_norm(
            x, residual, bias=self.linear_bias, ln_scale=self.ln_scale, ln_bias=self.ln_bias,
            dropout_rate=self.dropout_rate, ln_epsilon=self._epsilon, training=self.training,
            key=self._key(self.dropout_rate))

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, dropout_rate={self.dropout_rate}, epsilon={self._epsilon}"


class FusedMultiHeadAttention(_KeyedLayer):
    """Self-attention with fused qkv weights (Paddle's `incubate.nn.FusedMultiHeadAttention`).

    pre-LN (`normalize_before=True`) or post-LN; residual added inside. Parameters
    (Paddle's names and shapes): `qkv_weight` [3, num_heads, head_dim, embed_dim]
    (`[embed_dim, 3 * embed_dim]` with transpose_qkv_wb=True), `qkv_bias`
    [3, num_heads, head_dim], `linear_weight` [embed_dim, embed_dim], `linear_bias`,
    and `pre_ln_scale`/`pre_ln_bias` or `ln_scale`/`ln_bias`.

    Args:
      embed_dim, num_heads: width and heads (num_heads divides embed_dim).
      dropout_rate: dropout on the output projection; attn_dropout_rate: on the attention weights.
      kdim, vdim: kept for Paddle's signature (self-attention only: key/value are the query).
      normalize_before: pre-LN instead of post-LN.
      need_weights: must be False (as in Paddle).
      *_attr: ParamAttr of each parameter (False drops a bias).
      epsilon: both layer norms' epsilon.
      nranks, ring_id: must be 1 / -1 (tensor parallelism: pdx.parallel sharding).
      transpose_qkv_wb: keep qkv weight as [embed_dim, 3 * embed_dim] and bias as [3 * embed_dim].
      rngs: keyword-only seed / key / nnx.Rngs for the parameters and the dropout key.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import FusedMultiHeadAttention
      >>> attn = FusedMultiHeadAttention(8, 2, dropout_rate=0.0, attn_dropout_rate=0.0)
      >>> attn(jnp.ones((2, 4, 8))).shape
      (2, 4, 8)
    """

    def __init__(self, embed_dim, num_heads, dropout_rate=0.5, attn_dropout_rate=0.5, kdim=None, vdim=None,
                 normalize_before=False, need_weights=False, qkv_weight_attr=None, qkv_bias_attr=None,
                 linear_weight_attr=None, linear_bias_attr=None, pre_ln_scale_attr=None, pre_ln_bias_attr=None,
                 ln_scale_attr=None, ln_bias_attr=None, epsilon=1e-5, nranks=1, ring_id=-1, transpose_qkv_wb=False,
                 name=None, *, rngs=None):
        super().__init__()
        layer = "FusedMultiHeadAttention"
        _positive(layer, "embed_dim", embed_dim)
        _positive(layer, "num_heads", num_heads)
        if embed_dim % num_heads:
            raise _error(layer, f"embed_dim={embed_dim} must be divisible by num_heads={num_heads}")
        if need_weights:
            raise _error(layer, "need_weights=True is not supported (as in Paddle); use pdx.nn.MultiHeadAttention")
        _single_rank(layer, nranks)
        self.normalize_before = bool(normalize_before)
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.kdim, self.vdim, self.need_weights = kdim, vdim, False
        self.transpose_qkv_wb = bool(transpose_qkv_wb)
        self.dropout_rate = _rate(layer, "dropout_rate", dropout_rate)
        self.attn_dropout_rate = _rate(layer, "attn_dropout_rate", attn_dropout_rate)
        self._epsilon = float(epsilon)
        h, d, e = num_heads, self.head_dim, embed_dim
        if self.transpose_qkv_wb:
            w_shape, b_shape, w_axes, b_axes = [e, 3 * h * d], [3 * h * d], (axes.EMBED, axes.HEADS), (axes.HEADS,)
        else:
            w_shape, b_shape = [3, h, d, e], [3, h, d]
            w_axes, b_axes = (None, axes.HEADS, axes.HEAD_DIM, axes.EMBED), (None, axes.HEADS, axes.HEAD_DIM)
        self.qkv_weight = self.create_parameter(w_shape, attr=qkv_weight_attr, axis_names=w_axes, rngs=rngs)
        self.qkv_bias = self.create_parameter(b_shape, attr=qkv_bias_attr, is_bias=True, axis_names=b_axes, rngs=rngs)
        self.linear_weight = self.create_parameter([h * d, e], attr=linear_weight_attr,
                                                   axis_names=(axes.HEADS, axes.EMBED), rngs=rngs)
        self.linear_bias = self.create_parameter([e], attr=linear_bias_attr, is_bias=True, axis_names=(axes.EMBED,),
                                                 rngs=rngs)
        if self.normalize_before:
            self.pre_ln_scale = self.create_parameter([e], attr=pre_ln_scale_attr, default_initializer=Constant(1.0),
                                                      axis_names=(axes.NORM,), rngs=rngs)
            self.pre_ln_bias = self.create_parameter([e], attr=pre_ln_bias_attr, is_bias=True,
                                                     axis_names=(axes.NORM,), rngs=rngs)
            self.ln_scale = self.ln_bias = None
        else:
            self.pre_ln_scale = self.pre_ln_bias = None
            self.ln_scale = self.create_parameter([e], attr=ln_scale_attr, default_initializer=Constant(1.0),
                                                  axis_names=(axes.NORM,), rngs=rngs)
            self.ln_bias = self.create_parameter([e], attr=ln_bias_attr, is_bias=True, axis_names=(axes.NORM,),
                                                 rngs=rngs)
        self._init_key(rngs)

    def forward(self, query, key=None, value=None, attn_mask=None, cache=None):
        """Self-attention of `query` [batch, seq, embed_dim]; `key`/`value` must be None or `query` itself.

        `attn_mask`: bool/int (keep where True/1) or additive float, broadcastable to
        [batch, num_heads, seq, seq]. `cache`: optional [2, batch, num_heads, cache_len, head_dim]
        keys/values; then (out, new cache) is returned.
        """
        for arg, v in (("key", key), ("value", value)):
            if v is not None and v is not query:
                raise _error("FusedMultiHeadAttention", f"only self-attention is supported: pass {arg}=None (it is "
                                                        "the query); for cross-attention use pdx.nn.MultiHeadAttention")
        mask = _convert_mask(attn_mask, query.dtype)
        return IF.fused_multi_head_attention(
            query, self.qkv_weight, self.linear_weight, pre_layer_norm=self.normalize_before,
            pre_ln_scale=self.pre_ln_scale, pre_ln_bias=self.pre_ln_bias, ln_scale=self.ln_scale,
            ln_bias=self.ln_bias, pre_ln_epsilon=self._epsilon, qkv_bias=self.qkv_bias, linear_bias=self.linear_bias,
            cache_kv=cache, attn_mask=mask, dropout_rate=self.dropout_rate, attn_dropout_rate=self.attn_dropout_rate,
            ln_epsilon=self._epsilon, training=self.training, num_heads=self.num_heads,
            transpose_qkv_wb=self.transpose_qkv_wb, key=self._key(self.dropout_rate, self.attn_dropout_rate))

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout_rate={self.dropout_rate}, "
                f"attn_dropout_rate={self.attn_dropout_rate}, epsilon={self._epsilon}, "
                f"normalize_before={self.normalize_before}")


def _convert_mask(mask, dtype):
    """Paddle's rule: bool/int masks keep where 1 (else add -1e9); float masks are added as they are."""
    if mask is None:
        return None
    import jax.numpy as jnp

    mask = jnp.asarray(mask)
    if mask.dtype == jnp.bool_ or jnp.issubdtype(mask.dtype, jnp.integer):
        return (mask.astype(dtype) - 1.0) * 1e9
    return mask.astype(dtype)


class FusedFeedForward(_KeyedLayer):
    """Transformer FFN with residual and pre/post LayerNorm (Paddle's `incubate.nn.FusedFeedForward`).

    Parameters (Paddle's names): `_linear1_weight` [d_model, dim_feedforward], `_linear1_bias`,
    `_linear2_weight` [dim_feedforward, d_model], `_linear2_bias`, and `_ln1_scale`/`_ln1_bias`
    (normalize_before=True) or `_ln2_scale`/`_ln2_bias`.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import FusedFeedForward
      >>> FusedFeedForward(8, 16, dropout_rate=0.0)(jnp.ones((2, 4, 8))).shape
      (2, 4, 8)
    """

    def __init__(self, d_model, dim_feedforward, dropout_rate=0.1, epsilon=1e-05, activation="relu",
                 act_dropout_rate=None, normalize_before=False, linear1_weight_attr=None, linear1_bias_attr=None,
                 linear2_weight_attr=None, linear2_bias_attr=None, ln1_scale_attr=None, ln1_bias_attr=None,
                 ln2_scale_attr=None, ln2_bias_attr=None, nranks=1, ring_id=-1, name=None, *, rngs=None):
        super().__init__()
        layer = "FusedFeedForward"
        _positive(layer, "d_model", d_model)
        _positive(layer, "dim_feedforward", dim_feedforward)
        _single_rank(layer, nranks)
        if activation not in _FFN_ACTIVATIONS:
            raise _error(layer, f"activation={activation!r} is not supported; choose from {_FFN_ACTIVATIONS}")
        self._d_model, self._dim_feedforward = d_model, dim_feedforward
        self._dropout_rate = _rate(layer, "dropout_rate", dropout_rate)
        self._act_dropout_rate = self._dropout_rate if act_dropout_rate is None else _rate(
            layer, "act_dropout_rate", act_dropout_rate)
        self._act_method = activation
        self._normalize_before = bool(normalize_before)
        self._epsilon = float(epsilon)
        self._linear1_weight = self.create_parameter([d_model, dim_feedforward], attr=linear1_weight_attr,
                                                     axis_names=(axes.EMBED, axes.MLP), rngs=rngs)
        self._linear1_bias = self.create_parameter([dim_feedforward], attr=linear1_bias_attr, is_bias=True,
                                                   axis_names=(axes.MLP,), rngs=rngs)
        self._linear2_weight = self.create_parameter([dim_feedforward, d_model], attr=linear2_weight_attr,
                                                     axis_names=(axes.MLP, axes.EMBED), rngs=rngs)
        self._linear2_bias = self.create_parameter([d_model], attr=linear2_bias_attr, is_bias=True,
                                                   axis_names=(axes.EMBED,), rngs=rngs)
        if self._normalize_before:
            self._ln1_scale = self.create_parameter([d_model], attr=ln1_scale_attr, default_initializer=Constant(1.0),
                                                    axis_names=(axes.NORM,), rngs=rngs)
            self._ln1_bias = self.create_parameter([d_model], attr=ln1_bias_attr, is_bias=True,
                                                   axis_names=(axes.NORM,), rngs=rngs)
            self._ln2_scale = self._ln2_bias = None
        else:
            self._ln1_scale = self._ln1_bias = None
            self._ln2_scale = self.create_parameter([d_model], attr=ln2_scale_attr, default_initializer=Constant(1.0),
                                                    axis_names=(axes.NORM,), rngs=rngs)
            self._ln2_bias = self.create_parameter([d_model], attr=ln2_bias_attr, is_bias=True,
                                                   axis_names=(axes.NORM,), rngs=rngs)
        self._init_key(rngs)

    def forward(self, src, cache=None):
        return IF.fused_feedforward(
            src, self._linear1_weight, self._linear2_weight, self._linear1_bias, self._linear2_bias,
            self._ln1_scale, self._ln1_bias, self._ln2_scale, self._ln2_bias, dropout1_rate=self._act_dropout_rate,
            dropout2_rate=self._dropout_rate, activation=self._act_method, ln1_epsilon=self._epsilon,
            ln2_epsilon=self._epsilon, pre_layer_norm=self._normalize_before, training=self.training,
            key=self._key(self._act_dropout_rate, self._dropout_rate))

    def extra_repr(self) -> str:
        return (f"d_model={self._d_model}, dim_feedforward={self._dim_feedforward}, dropout_rate={self._dropout_rate}, "
                f"epsilon={self._epsilon}, activation={self._act_method}, act_dropout_rate={self._act_dropout_rate}, "
                f"normalize_before={self._normalize_before}")


def _attr_pair(attr, name: str):
    """Paddle's _convert_param_attr_to_list(attr, 2): a list/tuple gives one per sublayer."""
    if isinstance(attr, (list, tuple)):
        if len(attr) not in (1, 2):
            raise _error("FusedTransformerEncoderLayer", f"{name} as a list must have 1 or 2 entries; got {len(attr)}")
        return (attr[0], attr[-1])
    return (attr, attr)


class FusedTransformerEncoderLayer(nn.Layer):
    """FusedMultiHeadAttention (`fused_attn`) then FusedFeedForward (`ffn`) (Paddle's
    `incubate.nn.FusedTransformerEncoderLayer`); parameter names `fused_attn.qkv_weight`, `ffn._linear1_weight`, ...

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import FusedTransformerEncoderLayer
      >>> enc = FusedTransformerEncoderLayer(8, 2, 16, dropout_rate=0.0)
      >>> enc(jnp.ones((2, 4, 8))).shape
      (2, 4, 8)
    """

    def __init__(self, d_model, nhead, dim_feedforward, dropout_rate=0.1, activation="relu", attn_dropout_rate=None,
                 act_dropout_rate=None, normalize_before=False, weight_attr=None, bias_attr=None, *, rngs=None):
        super().__init__()
        _positive("FusedTransformerEncoderLayer", "dim_feedforward", dim_feedforward)
        attn_dropout_rate = dropout_rate if attn_dropout_rate is None else attn_dropout_rate
        act_dropout_rate = dropout_rate if act_dropout_rate is None else act_dropout_rate
        self.normalize_before = bool(normalize_before)
        w, b = _attr_pair(weight_attr, "weight_attr"), _attr_pair(bias_attr, "bias_attr")
        self.fused_attn = FusedMultiHeadAttention(
            d_model, nhead, dropout_rate=dropout_rate, attn_dropout_rate=attn_dropout_rate,
            normalize_before=normalize_before, qkv_weight_attr=w[0], qkv_bias_attr=b[0], linear_weight_attr=w[0],
            linear_bias_attr=b[0], pre_ln_scale_attr=w[0], pre_ln_bias_attr=b[0], ln_scale_attr=w[0],
            ln_bias_attr=b[0], rngs=rngs)
        self.ffn = FusedFeedForward(
            d_model, dim_feedforward, dropout_rate=dropout_rate, activation=activation,
            act_dropout_rate=act_dropout_rate, normalize_before=normalize_before, linear1_weight_attr=w[1],
            linear1_bias_attr=b[1], linear2_weight_attr=w[1], linear2_bias_attr=b[1], rngs=rngs)

    def forward(self, src, src_mask=None, cache=None):
        mask = _convert_mask(src_mask, src.dtype)
        if cache is None:
            return self.ffn(self.fused_attn(src, attn_mask=mask))
        attn_out, new_cache = self.fused_attn(src, attn_mask=mask, cache=cache)
        return self.ffn(attn_out), new_cache


class FusedLinear(nn.Layer):
    """x @ weight + bias (Paddle's `incubate.nn.FusedLinear`); `transpose_weight=True` stores weight as [out, in].

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import FusedLinear
      >>> FusedLinear(4, 3)(jnp.ones((2, 4))).shape
      (2, 3)
    """

    def __init__(self, in_features, out_features, weight_attr=None, bias_attr=None, transpose_weight=False, name=None,
                 *, rngs=None):
        super().__init__()
        _positive("FusedLinear", "in_features", in_features)
        _positive("FusedLinear", "out_features", out_features)
        self.transpose_weight = bool(transpose_weight)
        shape, names = ([out_features, in_features], (axes.MLP, axes.EMBED)) if self.transpose_weight else (
            [in_features, out_features], (axes.EMBED, axes.MLP))
        self.weight = self.create_parameter(shape, attr=weight_attr, axis_names=names, rngs=rngs)
        self.bias = self.create_parameter([out_features], attr=bias_attr, is_bias=True, axis_names=(axes.MLP,),
                                          rngs=rngs)

    def forward(self, input):
        return IF.fused_linear(input, self.weight, self.bias, self.transpose_weight)


class FusedDropoutAdd(_KeyedLayer):
    """dropout(x) + y (Paddle's `incubate.nn.FusedDropoutAdd`).

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.incubate.nn import FusedDropoutAdd
      >>> FusedDropoutAdd(0.5).eval()(jnp.ones(2), jnp.ones(2)).tolist()
      [2.0, 2.0]
    """

    def __init__(self, p=0.5, mode="upscale_in_train", name=None, *, rngs=None):
        super().__init__()
        self.p = _rate("FusedDropoutAdd", "p", p)
        if mode not in ("upscale_in_train", "downscale_in_infer"):
            raise _error("FusedDropoutAdd", f"mode must be 'upscale_in_train' or 'downscale_in_infer'; got mode={mode!r}")
        self.mode = mode
        self._init_key(rngs)

    def forward(self, x, y):
        return IF.fused_dropout_add(x, y, p=self.p, training=self.training, mode=self.mode, key=self._key(self.p))

    def extra_repr(self) -> str:
        return f"p={self.p}, mode={self.mode}"
