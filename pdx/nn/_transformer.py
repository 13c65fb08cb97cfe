"""Attention and Transformer layers with Paddle's names, sublayer names and layouts.

Tensors are [batch, seq, embed]; cached keys/values are [batch, heads, seq,
head_dim] (Paddle's cache layout). A bool/int `attn_mask` keeps positions
where it is True/1 and becomes an additive -1e9 mask elsewhere, exactly as
Paddle converts it; a float mask is added to the attention logits. Masks
broadcast to [batch, heads, q_len, k_len].
"""

from __future__ import annotations

import collections
import copy

import jax.numpy as jnp
import numpy as np
from flax import nnx

import pdx.nn.functional as F
from pdx import _placement, _random
from pdx._dtype import default_float
from pdx.nn import axes
from pdx._args import is_int
from pdx.nn._common import RngState, attr_list, init_rng_state, layer_error, next_rng
from pdx.nn._container import LayerList
from pdx.nn._dropout import Dropout
from pdx.nn._layer import Layer, as_rngs, restore_attribute_order
from pdx.nn._linear import Linear
from pdx.nn._norm import LayerNorm
from pdx._args import as_array

__all__ = ["MultiHeadAttention", "Transformer", "TransformerDecoder", "TransformerDecoderLayer",
           "TransformerEncoder", "TransformerEncoderLayer"]


def _convert_attention_mask(attn_mask, dtype):
    """Paddle's rule: bool/int masks keep where 1 (else add -1e9); float masks are added as is."""
    if attn_mask is None:
        return None
    mask = as_array(attn_mask, name="attn_mask", op="nn.MultiHeadAttention")
    if mask.dtype == jnp.bool_ or jnp.issubdtype(mask.dtype, jnp.integer):
        return (mask.astype(dtype) - 1.0) * 1e9
    return mask.astype(dtype)


def _positive(value, *, layer: str, name: str) -> int:
    if not is_int(value) or value <= 0:
        raise layer_error(layer, f"`{name}` must be a positive int; got {name}={value!r}")
    return int(value)


def _check_input(layer: str, name: str, x, width: int):
    x = as_array(x, name=name, op=f"nn.{layer}")
    if x.ndim != 3 or x.shape[-1] != width:
        raise layer_error(layer, f"`{name}` must be [batch, seq, {width}]; got {name}.shape={tuple(x.shape)}")
    return x


def _constrain_activation(x):
    """Shard a (batch, seq, embed) activation by logical names under `pdx.parallel.use_mesh` (else a no-op)."""
    return _placement.constrain(x, (axes.BATCH, axes.SEQ, axes.EMBED)) if x.ndim == 3 else x


class MultiHeadAttention(Layer):
    """Multi-head scaled dot-product attention (Paddle's `nn.MultiHeadAttention`).

    Sublayers `q_proj`, `k_proj`, `v_proj`, `out_proj` are Linear layers with
    Paddle's names, so Paddle state_dicts load directly. Attention dropout
    draws from the layer's own RNG state (see `pdx.nn.Dropout`).

    Args:
      embed_dim: model width; must divide by num_heads.
      num_heads: attention heads.
      dropout: dropout probability on the attention weights (training only).
      kdim, vdim: widths of key/value inputs (default embed_dim).
      need_weights: also return the attention weights [batch, heads, q, k].
      weight_attr, bias_attr: attributes of the four projections (bias_attr=False: no biases).
      rngs: keyword-only seed / key / nnx.Rngs for the parameters and the dropout key.

    `forward(query, key=None, value=None, attn_mask=None, cache=None)` returns the
    output [batch, q_len, embed_dim], plus the weights when need_weights and the
    updated cache when a cache is given (Paddle's tuple order).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> mha = pdx.nn.MultiHeadAttention(8, 2)
      >>> mha(jnp.ones((2, 5, 8))).shape
      (2, 5, 8)
    """

    Cache = collections.namedtuple("Cache", ["k", "v"])
    StaticCache = collections.namedtuple("StaticCache", ["k", "v"])

    def __init__(self, embed_dim, num_heads, dropout=0.0, kdim=None, vdim=None, need_weights=False,
                 weight_attr=None, bias_attr=None, *, rngs=None):
        super().__init__()
        layer = "MultiHeadAttention"
        self.embed_dim = _positive(embed_dim, layer=layer, name="embed_dim")
        self.num_heads = _positive(num_heads, layer=layer, name="num_heads")
        if embed_dim % num_heads:
            raise layer_error(layer, f"embed_dim={embed_dim} must be divisible by num_heads={num_heads}")
        if not 0 <= dropout <= 1:
            raise layer_error(layer, f"dropout must be in [0, 1]; got dropout={dropout!r}")
        self.kdim = embed_dim if kdim is None else _positive(kdim, layer=layer, name="kdim")
        self.vdim = embed_dim if vdim is None else _positive(vdim, layer=layer, name="vdim")
        self.head_dim = embed_dim // num_heads
        self.dropout = float(dropout)
        self.need_weights = bool(need_weights)
        rngs = as_rngs(rngs)
        in_names, out_names = (axes.EMBED, axes.HEADS), (axes.HEADS, axes.EMBED)
        self.q_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr, axis_names=in_names, rngs=rngs)
        self.k_proj = Linear(self.kdim, embed_dim, weight_attr, bias_attr, axis_names=in_names, rngs=rngs)
        self.v_proj = Linear(self.vdim, embed_dim, weight_attr, bias_attr, axis_names=in_names, rngs=rngs)
        self.out_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr, axis_names=out_names, rngs=rngs)
        self.rng = init_rng_state(rngs, op=layer)

    def _split_heads(self, x):
        # [B, S, E] -> [B, H, S, D]
        b, s, _ = x.shape
        return jnp.transpose(jnp.reshape(x, (b, s, self.num_heads, self.head_dim)), (0, 2, 1, 3))

    def compute_kv(self, key, value):
        """Project and split `key`/`value` into heads: two [batch, heads, seq, head_dim] arrays."""
        key = _check_input("MultiHeadAttention", "key", key, self.kdim)
        value = _check_input("MultiHeadAttention", "value", value, self.vdim)
        return self._split_heads(self.k_proj(key)), self._split_heads(self.v_proj(value))

    def gen_cache(self, key, value=None, type=Cache):  # noqa: A002  (Paddle's argument name)
        """Paddle's cache constructor.

        `type=StaticCache`: project key/value once (cross attention on fixed memory).
        `type=Cache` with value None: an empty incremental cache for `key`'s batch.
        `type=Cache` with value: wrap already-projected [batch, heads, seq, head_dim] arrays.
        """
        if type is MultiHeadAttention.StaticCache:
            return self.StaticCache(*self.compute_kv(key, key if value is None else value))
        if value is None:
            key = as_array(key, name="key", op="nn.MultiHeadAttention.gen_cache")
            empty = jnp.zeros((key.shape[0], self.num_heads, 0, self.head_dim), key.dtype)
            return self.Cache(empty, empty)
        return self.Cache(key, value)

    def _attend(self, q, k, v, mask):
        """q, k, v: [B, H, S, D] -> (out [B, S, H*D], weights or None)."""
        p = self.dropout if self.training else 0.0
        dropout_key = next_rng(self.rng) if p > 0 else None
        if self.need_weights:
            logits = jnp.einsum("bhqd,bhkd->bhqk", q * (self.head_dim ** -0.5), k)
            if mask is not None:
                logits = logits + mask
            weights = F.softmax(logits)
            if p > 0:
                weights = F.dropout(weights, p, training=True, mode="upscale_in_train", key=dropout_key)
            out = jnp.einsum("bhqk,bhkd->bqhd", weights, v)
        else:
            # The fused path: F dispatches to a kernel where one exists.
            t = lambda a: jnp.transpose(a, (0, 2, 1, 3))  # noqa: E731
            out = F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=mask, dropout_p=p,
                                                 training=p > 0, **_sdpa_key(dropout_key))
            weights = None
        b, s = out.shape[:2]
        return jnp.reshape(out, (b, s, self.embed_dim)), weights

    def forward(self, query, key=None, value=None, attn_mask=None, cache=None):
        query = _check_input("MultiHeadAttention", "query", query, self.embed_dim)
        key = query if key is None else key
        value = query if value is None else value
        q = self._split_heads(self.q_proj(query))
        if isinstance(cache, self.StaticCache):
            k, v = cache.k, cache.v
        else:
            k, v = self.compute_kv(key, value)
        if isinstance(cache, self.Cache):
            k = jnp.concatenate([cache.k, k], axis=2)
            v = jnp.concatenate([cache.v, v], axis=2)
            cache = self.Cache(k, v)
        mask = _convert_attention_mask(attn_mask, q.dtype)
        if mask is not None:
            if mask.ndim > 4:
                raise layer_error("MultiHeadAttention", f"attn_mask must broadcast to [batch, heads, q_len, k_len]; "
                                                        f"got attn_mask.shape={tuple(mask.shape)}")
            # Leading 1s make Paddle's numpy-style broadcasting explicit (a 3-D mask is [heads, q, k]).
            mask = jnp.reshape(mask, (1,) * (4 - mask.ndim) + mask.shape)
        out, weights = self._attend(q, k, v, mask)
        out = self.out_proj(out)
        outs = [out]
        if self.need_weights:
            outs.append(weights)
        if cache is not None:
            outs.append(cache)
        return out if len(outs) == 1 else tuple(outs)


def _sdpa_key(key):
    return {} if key is None else {"key_rng": key}


def _activation(name: str, layer: str):
    fn = getattr(F, name, None) if isinstance(name, str) else None
    if not callable(fn):
        raise layer_error(layer, f"activation={name!r} is not a function of pdx.nn.functional (e.g. 'relu', 'gelu')")
    return fn


class TransformerEncoderLayer(Layer):
    """One Transformer encoder block (Paddle's `nn.TransformerEncoderLayer`).

    self-attention -> dropout1 -> residual -> norm1, then linear1 -> activation ->
    dropout -> linear2 -> dropout2 -> residual -> norm2; with normalize_before the
    norms come first in each branch (pre-LN).

    Args:
      d_model: model width.
      nhead: attention heads.
      dim_feedforward: hidden width of the feed-forward block.
      dropout: dropout after attention and feed-forward (also the default of the next two).
      activation: name of a `pdx.nn.functional` activation ('relu', 'gelu', ...).
      attn_dropout: dropout on attention weights (default: dropout).
      act_dropout: dropout after the activation (default: dropout).
      normalize_before: pre-LN (True) or post-LN (False).
      weight_attr, bias_attr: one attr for all, or a list of 2 (attention, feed-forward).
      layer_norm_eps: epsilon of norm1/norm2.
      rngs: keyword-only seed / key / nnx.Rngs.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> layer = pdx.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
      >>> layer(jnp.ones((2, 5, 8))).shape
      (2, 5, 8)
    """

    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1, activation="relu", attn_dropout=None,
                 act_dropout=None, normalize_before=False, weight_attr=None, bias_attr=None,
                 layer_norm_eps=1e-05, *, rngs=None):
        super().__init__()
        layer = type(self).__name__
        act = _activation(activation, layer)
        d_model = _positive(d_model, layer=layer, name="d_model")
        _positive(nhead, layer=layer, name="nhead")
        dim_feedforward = _positive(dim_feedforward, layer=layer, name="dim_feedforward")
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        act_dropout = dropout if act_dropout is None else act_dropout
        self.normalize_before = bool(normalize_before)
        weight_attrs = attr_list(weight_attr, 2, layer=layer, name="weight_attr")
        bias_attrs = attr_list(bias_attr, 2, layer=layer, name="bias_attr")
        rngs = as_rngs(rngs)
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout, weight_attr=weight_attrs[0],
                                            bias_attr=bias_attrs[0], rngs=rngs)
        self.linear1 = Linear(d_model, dim_feedforward, weight_attrs[1], bias_attrs[1],
                              axis_names=(axes.EMBED, axes.MLP), rngs=rngs)
        self.dropout = Dropout(act_dropout, mode="upscale_in_train", rngs=rngs)
        self.linear2 = Linear(dim_feedforward, d_model, weight_attrs[1], bias_attrs[1],
                              axis_names=(axes.MLP, axes.EMBED), rngs=rngs)
        self.norm1 = LayerNorm(d_model, layer_norm_eps, rngs=rngs)
        self.norm2 = LayerNorm(d_model, layer_norm_eps, rngs=rngs)
        self.dropout1 = Dropout(dropout, mode="upscale_in_train", rngs=rngs)
        self.dropout2 = Dropout(dropout, mode="upscale_in_train", rngs=rngs)
        self.activation = act

    def forward(self, src, src_mask=None, cache=None):
        src = as_array(src, name="src", op="nn.TransformerEncoderLayer")
        src_mask = _convert_attention_mask(src_mask, src.dtype)
        src = _constrain_activation(src)
        residual = src
        if self.normalize_before:
            src = self.norm1(src)
        if cache is None:
            src = self.self_attn(src, src, src, src_mask)
        else:
            src, incremental_cache = self.self_attn(src, src, src, src_mask, cache)
        src = residual + self.dropout1(src)
        if not self.normalize_before:
            src = self.norm1(src)
        residual = src
        if self.normalize_before:
            src = self.norm2(src)
        src = self.linear2(self.dropout(self.activation(self.linear1(src))))
        src = residual + self.dropout2(src)
        if not self.normalize_before:
            src = self.norm2(src)
        src = _constrain_activation(src)
        return src if cache is None else (src, incremental_cache)

    def gen_cache(self, src):
        """An empty incremental self-attention cache for `src`'s batch."""
        return self.self_attn.gen_cache(src, type=MultiHeadAttention.Cache)


def _stack(layer: Layer, num_layers, rngs, owner: str) -> LayerList:
    """`layer` plus num_layers - 1 deep copies with the same initial parameters.

    Each copy gets fresh dropout keys, so the layers draw independent masks.
    """
    num_layers = _positive(num_layers, layer=owner, name="num_layers")
    if not isinstance(layer, Layer):
        raise TypeError(f"pdx.nn.{owner}: the layer to stack must be a Layer; got {type(layer).__name__}")
    layers = [layer]
    for _ in range(num_layers - 1):
        clone = copy.deepcopy(layer)
        restore_attribute_order(layer, clone)
        for _, node in nnx.iter_graph(clone):
            if isinstance(node, RngState):
                node.set_value(rngs.dropout() if rngs is not None else _random.next_key(None, op=owner))
        layers.append(clone)
    return LayerList(layers)


class TransformerEncoder(Layer):
    """A stack of `num_layers` encoder layers, then an optional norm (Paddle's `nn.TransformerEncoder`).

    The given layer is used as `layers.0`; `layers.1`... are deep copies of it
    (independent parameters with the same initial values, fresh dropout keys).

    Args:
      encoder_layer: a TransformerEncoderLayer (or any layer with the same call).
      num_layers: how many layers to stack.
      norm: optional final LayerNorm.
      rngs: keyword-only seed / key / nnx.Rngs for the copies' dropout keys.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> layer = pdx.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
      >>> enc = pdx.nn.TransformerEncoder(layer, 2)
      >>> enc(jnp.ones((1, 3, 8))).shape, len(enc.layers)
      ((1, 3, 8), 2)
    """

    def __init__(self, encoder_layer, num_layers, norm=None, *, rngs=None):
        super().__init__()
        self.layers = _stack(encoder_layer, num_layers, as_rngs(rngs), "TransformerEncoder")
        self.num_layers = int(num_layers)
        self.norm = norm

    def forward(self, src, src_mask=None, cache=None):
        src = as_array(src, name="src", op="nn.TransformerEncoder")
        src_mask = _convert_attention_mask(src_mask, src.dtype)
        output = src
        new_caches = []
        for i, layer in enumerate(self.layers):
            if cache is None:
                output = layer(output, src_mask=src_mask)
            else:
                output, new_cache = layer(output, src_mask=src_mask, cache=cache[i])
                new_caches.append(new_cache)
        if self.norm is not None:
            output = self.norm(output)
        return output if cache is None else (output, new_caches)

    def gen_cache(self, src):
        """One empty incremental cache per layer."""
        return [layer.gen_cache(src) for layer in self.layers]


class TransformerDecoderLayer(Layer):
    """One Transformer decoder block (Paddle's `nn.TransformerDecoderLayer`).

    self-attention (norm1, dropout1), cross-attention over `memory` (norm2,
    dropout2), feed-forward (norm3, dropout3); pre- or post-LN as normalize_before.

    Args:
      d_model, nhead, dim_feedforward, dropout, activation, attn_dropout, act_dropout,
      normalize_before, layer_norm_eps: as TransformerEncoderLayer.
      weight_attr, bias_attr: one attr for all, or a list of 3 (self-attention,
        cross-attention, feed-forward).
      rngs: keyword-only seed / key / nnx.Rngs.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> layer = pdx.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0)
      >>> layer(jnp.ones((2, 4, 8)), jnp.ones((2, 6, 8))).shape
      (2, 4, 8)
    """

    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1, activation="relu", attn_dropout=None,
                 act_dropout=None, normalize_before=False, weight_attr=None, bias_attr=None,
                 layer_norm_eps=1e-05, *, rngs=None):
        super().__init__()
        layer = type(self).__name__
        act = _activation(activation, layer)
        d_model = _positive(d_model, layer=layer, name="d_model")
        _positive(nhead, layer=layer, name="nhead")
        dim_feedforward = _positive(dim_feedforward, layer=layer, name="dim_feedforward")
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        act_dropout = dropout if act_dropout is None else act_dropout
        self.normalize_before = bool(normalize_before)
        weight_attrs = attr_list(weight_attr, 3, layer=layer, name="weight_attr")
        bias_attrs = attr_list(bias_attr, 3, layer=layer, name="bias_attr")
        rngs = as_rngs(rngs)
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout, weight_attr=weight_attrs[0],
                                            bias_attr=bias_attrs[0], rngs=rngs)
        self.cross_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout, weight_attr=weight_attrs[1],
                                             bias_attr=bias_attrs[1], rngs=rngs)
        self.linear1 = Linear(d_model, dim_feedforward, weight_attrs[2], bias_attrs[2],
                              axis_names=(axes.EMBED, axes.MLP), rngs=rngs)
        self.dropout = Dropout(act_dropout, mode="upscale_in_train", rngs=rngs)
        self.linear2 = Linear(dim_feedforward, d_model, weight_attrs[2], bias_attrs[2],
                              axis_names=(axes.MLP, axes.EMBED), rngs=rngs)
        self.norm1 = LayerNorm(d_model, layer_norm_eps, rngs=rngs)
        self.norm2 = LayerNorm(d_model, layer_norm_eps, rngs=rngs)
        self.norm3 = LayerNorm(d_model, layer_norm_eps, rngs=rngs)
        self.dropout1 = Dropout(dropout, mode="upscale_in_train", rngs=rngs)
        self.dropout2 = Dropout(dropout, mode="upscale_in_train", rngs=rngs)
        self.dropout3 = Dropout(dropout, mode="upscale_in_train", rngs=rngs)
        self.activation = act

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, cache=None):
        tgt = as_array(tgt, name="tgt", op="nn.TransformerDecoderLayer")
        memory = as_array(memory, name="memory", op="nn.TransformerDecoderLayer")
        tgt_mask = _convert_attention_mask(tgt_mask, tgt.dtype)
        memory_mask = _convert_attention_mask(memory_mask, memory.dtype)
        tgt = _constrain_activation(tgt)
        residual = tgt
        if self.normalize_before:
            tgt = self.norm1(tgt)
        if cache is None:
            tgt = self.self_attn(tgt, tgt, tgt, tgt_mask, None)
        else:
            tgt, incremental_cache = self.self_attn(tgt, tgt, tgt, tgt_mask, cache[0])
        tgt = residual + self.dropout1(tgt)
        if not self.normalize_before:
            tgt = self.norm1(tgt)
        residual = tgt
        if self.normalize_before:
            tgt = self.norm2(tgt)
        if cache is None:
            tgt = self.cross_attn(tgt, memory, memory, memory_mask, None)
        else:
            tgt, static_cache = self.cross_attn(tgt, memory, memory, memory_mask, cache[1])
        tgt = residual + self.dropout2(tgt)
        if not self.normalize_before:
            tgt = self.norm2(tgt)
        residual = tgt
        if self.normalize_before:
            tgt = self.norm3(tgt)
        tgt = self.linear2(self.dropout(self.activation(self.linear1(tgt))))
        tgt = residual + self.dropout3(tgt)
        if not self.normalize_before:
            tgt = self.norm3(tgt)
        tgt = _constrain_activation(tgt)
        return tgt if cache is None else (tgt, (incremental_cache, static_cache))

    def gen_cache(self, memory):
        """(empty incremental self-attention cache, projected static cross-attention cache)."""
        incremental = self.self_attn.gen_cache(memory, type=MultiHeadAttention.Cache)
        static = self.cross_attn.gen_cache(memory, memory, type=MultiHeadAttention.StaticCache)
        return incremental, static


class TransformerDecoder(Layer):
    """A stack of `num_layers` decoder layers, then an optional norm (Paddle's `nn.TransformerDecoder`).

    The given layer is `layers.0`; the others are deep copies (same initial
    values, fresh dropout keys).

    Args:
      decoder_layer: a TransformerDecoderLayer.
      num_layers: how many layers to stack.
      norm: optional final LayerNorm.
      rngs: keyword-only seed / key / nnx.Rngs for the copies' dropout keys.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> layer = pdx.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0)
      >>> pdx.nn.TransformerDecoder(layer, 2)(jnp.ones((1, 3, 8)), jnp.ones((1, 4, 8))).shape
      (1, 3, 8)
    """

    def __init__(self, decoder_layer, num_layers, norm=None, *, rngs=None):
        super().__init__()
        self.layers = _stack(decoder_layer, num_layers, as_rngs(rngs), "TransformerDecoder")
        self.num_layers = int(num_layers)
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, cache=None):
        tgt = as_array(tgt, name="tgt", op="nn.TransformerDecoder")
        memory = as_array(memory, name="memory", op="nn.TransformerDecoder")
        tgt_mask = _convert_attention_mask(tgt_mask, tgt.dtype)
        memory_mask = _convert_attention_mask(memory_mask, memory.dtype)
        output = tgt
        new_caches = []
        for i, layer in enumerate(self.layers):
            if cache is None:
                output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask, cache=None)
            else:
                output, new_cache = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                                          cache=cache[i])
                new_caches.append(new_cache)
        if self.norm is not None:
            output = self.norm(output)
        return output if cache is None else (output, new_caches)

    def gen_cache(self, memory, do_zip=False):
        """One (incremental, static) cache pair per layer; do_zip groups them by kind."""
        cache = [layer.gen_cache(memory) for layer in self.layers]
        return list(zip(*cache)) if do_zip else cache


def _split_attr(attr, layer: str, name: str):
    """Paddle's Transformer rule: 1, 2 or 3 attrs -> (encoder's 2, decoder's 3)."""
    if not isinstance(attr, (list, tuple)):
        return attr, attr
    if len(attr) == 1:
        return [attr[0]] * 2, [attr[0]] * 3
    if len(attr) == 2:
        return list(attr), [attr[0], attr[0], attr[-1]]
    if len(attr) == 3:
        return [attr[0], attr[-1]], list(attr)
    raise layer_error(layer, f"`{name}` as a list must have 1, 2 or 3 entries; got {len(attr)}")


class Transformer(Layer):
    """Encoder-decoder Transformer (Paddle's `nn.Transformer`).

    Args:
      d_model, nhead: model width and attention heads.
      num_encoder_layers, num_decoder_layers: stack depths.
      dim_feedforward, dropout, activation, attn_dropout, act_dropout, normalize_before:
        as TransformerEncoderLayer.
      weight_attr, bias_attr: one attr, or a list of 1, 2 or 3 (Paddle's rule).
      custom_encoder, custom_decoder: layers used instead of the built ones.
      rngs: keyword-only seed / key / nnx.Rngs.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> model = pdx.nn.Transformer(8, 2, 1, 1, 16, dropout=0.0)
      >>> model(jnp.ones((1, 5, 8)), jnp.ones((1, 3, 8))).shape
      (1, 3, 8)
    """

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, activation="relu", attn_dropout=None, act_dropout=None, normalize_before=False,
                 weight_attr=None, bias_attr=None, custom_encoder=None, custom_decoder=None, *, rngs=None):
        super().__init__()
        rngs = as_rngs(rngs)
        enc_w, dec_w = _split_attr(weight_attr, "Transformer", "weight_attr")
        enc_b, dec_b = _split_attr(bias_attr, "Transformer", "bias_attr")
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            enc_layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation, attn_dropout,
                                                act_dropout, normalize_before, enc_w, enc_b, rngs=rngs)
            self.encoder = TransformerEncoder(enc_layer, num_encoder_layers, LayerNorm(d_model, rngs=rngs),
                                              rngs=rngs)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            dec_layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation, attn_dropout,
                                                act_dropout, normalize_before, dec_w, dec_b, rngs=rngs)
            self.decoder = TransformerDecoder(dec_layer, num_decoder_layers, LayerNorm(d_model, rngs=rngs),
                                              rngs=rngs)
        self.d_model = d_model
        self.nhead = nhead

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None):
        src = as_array(src, name="src", op="nn.Transformer")
        tgt = as_array(tgt, name="tgt", op="nn.Transformer")
        memory = self.encoder(src, src_mask=_convert_attention_mask(src_mask, src.dtype))
        return self.decoder(tgt, memory, tgt_mask=_convert_attention_mask(tgt_mask, tgt.dtype),
                            memory_mask=_convert_attention_mask(memory_mask, memory.dtype))

    def generate_square_subsequent_mask(self, length):
        """A [length, length] float mask: 0 on and below the diagonal, -inf above."""
        length = int(length)
        upper = np.triu(np.ones((length, length), dtype=bool), 1)
        return jnp.where(jnp.asarray(upper), -jnp.inf, 0.0).astype(default_float())
