"""LLaMA-style decoder: RMSNorm, rotary position embeddings, SwiGLU, grouped-query attention.

State-dict names follow Hugging Face's `LlamaForCausalLM` (`model.layers.0.self_attn.q_proj.weight`),
with Paddle's `[in, out]` Linear weights (see `_hf.py` for the import). With `scan_layers=True` the
decoder layers are one `pdx.nn.LayerStack`: names lose the layer index and gain a leading layer
dimension (`model.layers.self_attn.q_proj.weight`, shape (num_layers, in, out)).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

import pdx.nn.functional as F
from pdx import kernels
from pdx.models.llama._config import LlamaConfig
from pdx.nn import Embedding, Layer, LayerList, LayerStack, Linear, ParamAttr, RMSNorm, axes
from pdx.parallel import constrain, context_attention, context_parallel_active, run_layers
from pdx.nn.initializer import Normal


# Activations between blocks: batch over dp/sharding, sequence over sep (and over mp with
# HybridConfig(sequence_parallel=True)); a no-op outside use_mesh.
_ACTIVATION = (axes.BATCH, axes.SEQ, axes.EMBED)


def _linear(n_in, n_out, names, rngs, bias: bool = False):
    return Linear(n_in, n_out, weight_attr=ParamAttr(initializer=Normal(0.0, 0.02)), bias_attr=None if bias else False,
                  axis_names=names, rngs=rngs)


def window_bias(q_positions, k_positions, window: int):
    """Additive logit bias (1, 1, Sq, Sk): 0 where 0 <= q - k < window, a large negative number elsewhere."""
    gap = q_positions[:, None] - k_positions[None, :]
    return jnp.where((gap >= 0) & (gap < window), 0.0, -1e30).astype(jnp.float32)[None, None]


def rope_tables(positions, head_dim: int, theta: float):
    """cos and sin tables for integer `positions` (..., S) -> (..., S, 1, head_dim) each."""
    inv_freq = 1.0 / (theta ** (jnp.arange(0, head_dim, 2, dtype=jnp.float32) / head_dim))
    freqs = positions.astype(jnp.float32)[..., None] * inv_freq            # (..., S, D/2)
    angles = jnp.concatenate([freqs, freqs], axis=-1)[..., None, :]          # (..., S, 1, D)
    return jnp.cos(angles), jnp.sin(angles)


def apply_rope(x, cos, sin):
    """Rotate (B, S, H, D) queries or keys by their positions (the rotate-half convention)."""
    half = x.shape[-1] // 2
    rotated = jnp.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return (x * cos + rotated * sin).astype(x.dtype)


class LlamaAttention(Layer):
    """Grouped-query self-attention with RoPE; attention through `pdx.kernels.flash_attention`."""

    def __init__(self, config: LlamaConfig, *, rngs=None):
        super().__init__()
        h, d = config.hidden_size, config.head_dim
        self.config = config
        bias = config.attention_bias
        self.q_proj = _linear(h, config.num_attention_heads * d, (axes.EMBED, axes.HEADS), rngs, bias)
        self.k_proj = _linear(h, config.num_key_value_heads * d, (axes.EMBED, axes.KV_HEADS), rngs, bias)
        self.v_proj = _linear(h, config.num_key_value_heads * d, (axes.EMBED, axes.KV_HEADS), rngs, bias)
        self.o_proj = _linear(config.num_attention_heads * d, h, (axes.HEADS, axes.EMBED), rngs)

    def _qkv(self, x, cos, sin):
        b, s, _ = x.shape
        c = self.config
        q = self.q_proj(x).reshape(b, s, c.num_attention_heads, c.head_dim)
        k = self.k_proj(x).reshape(b, s, c.num_key_value_heads, c.head_dim)
        v = self.v_proj(x).reshape(b, s, c.num_key_value_heads, c.head_dim)
        return apply_rope(q, cos, sin), apply_rope(k, cos, sin), v

    def forward(self, x, cos, sin, segment_ids=None):  # x: (B, S, hidden); segment_ids: (B, S) packed documents
        q, k, v = self._qkv(x, cos, sin)
        window = self.config.sliding_window
        if context_parallel_active():  # the sequence is split over "sep": ring / all-gather attention
            out = context_attention(q, k, v, causal=True, segment_ids=segment_ids, window=window)
            return self.o_proj(out.reshape(x.shape[0], x.shape[1], -1))
        bias = None
        if window is not None and not (isinstance(x.shape[1], int) and x.shape[1] <= window):  # symbolic: mask
            pos = jnp.arange(x.shape[1])
            bias = window_bias(pos, pos, window)
        out = kernels.flash_attention(q, k, v, causal=True, segment_ids=segment_ids, bias=bias,
                                      impl=self.config.attention_impl)
        return self.o_proj(out.reshape(x.shape[0], x.shape[1], -1))

    def decode(self, x, cos, sin, cache, index):
        """Attend from x (positions index..index+S-1) to the cache after writing x's keys/values into it.

        The cache is (B, kv_heads, T, head_dim) per tensor: attention reads it
        in that layout with no transpose (the per-step cost of serving is
        reading the cache). `index` is a scalar, or (B,) with each row (a
        serving slot) at its own position.
        """
        q, k, v = self._qkv(x, cos, sin)
        b, s, hq, d = q.shape
        hk = k.shape[2]
        index = jnp.asarray(index)
        k, v = k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3)                 # (B, kv_heads, S, D)
        if index.ndim == 0:
            write = lambda c, u: jax.lax.dynamic_update_slice_in_dim(c, u.astype(c.dtype), index, axis=2)  # noqa: E731
        else:
            row = jax.vmap(lambda c, u, i: jax.lax.dynamic_update_slice_in_dim(c, u.astype(c.dtype), i, axis=1))
            write = functools.partial(lambda f, c, u: f(c, u, index), row)
        k_cache, v_cache = write(cache[0], k), write(cache[1], v)
        q_pos = index[..., None] + jnp.arange(s)                               # (S,) or (B, S)
        gap = q_pos[..., :, None] - jnp.arange(k_cache.shape[2])               # (S, T) or (B, S, T)
        visible = gap >= 0
        if self.config.sliding_window is not None:
            visible = visible & (gap < self.config.sliding_window)
        visible = visible[None] if visible.ndim == 2 else visible               # (B|1, S, T)
        qg = q.reshape(b, s, hk, hq // hk, d).transpose(0, 2, 3, 1, 4)          # (B, kv_heads, group, S, D)
        logits = jnp.einsum("bhgsd,bhtd->bhgst", qg, k_cache, preferred_element_type=jnp.float32) / math.sqrt(d)
        logits = jnp.where(visible[:, None, None], logits, -jnp.inf)
        probs = jax.nn.softmax(logits, axis=-1).astype(v_cache.dtype)
        out = jnp.einsum("bhgst,bhtd->bhgsd", probs, v_cache).transpose(0, 3, 1, 2, 4)  # (B, S, kv_heads, group, D)
        return self.o_proj(out.reshape(b, s, -1).astype(x.dtype)), (k_cache, v_cache)

    def paged_decode(self, x, cos, sin, pages, slot_mapping, block_tables, context_lens, *, gather=False):
        """Write x's keys/values into the page pool at `slot_mapping`, then attend over each row's blocks.

        pages: (keys, values), each (num_blocks, block_size, kv_heads, head_dim).
        x (B, T, hidden) holds the last T tokens of each row (padding first,
        with slot -1); see `pdx.kernels.paged_attention` for the layout.
        Returns (output, the updated pages).

        With `gather`, the pool is only read (`kernels.paged_attention_with_new`
        attends over each row's blocks and the new tokens beside them), and
        (output, (keys, values) of the new tokens) come back for the caller to
        write into the pool in a separate call. A
        program that reads and updates the same large buffer makes XLA copy
        it whole (on CPU); this way each step's cost follows the rows it runs,
        not the pool's size.
        """
        q, k, v = self._qkv(x, cos, sin)
        window = self.config.sliding_window
        if gather:
            out = kernels.paged_attention_with_new(q, k, v, *pages, block_tables, context_lens, slot_mapping >= 0,
                                                   sliding_window=window)
        else:
            pages = kernels.write_kv_pages(*pages, k, v, slot_mapping)
            out = kernels.paged_attention(q, *pages, block_tables, context_lens, sliding_window=window)
        out = self.o_proj(out.reshape(x.shape[0], x.shape[1], -1).astype(x.dtype))
        return out, ((k, v) if gather else pages)


class LlamaMLP(Layer):
    """SwiGLU feed-forward: down(silu(gate(x)) * up(x))."""

    def __init__(self, config: LlamaConfig, *, rngs=None):
        super().__init__()
        h, i = config.hidden_size, config.intermediate_size
        self.gate_proj = _linear(h, i, (axes.EMBED, axes.MLP), rngs)
        self.up_proj = _linear(h, i, (axes.EMBED, axes.MLP), rngs)
        self.down_proj = _linear(i, h, (axes.MLP, axes.EMBED), rngs)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(Layer):
    """Pre-norm block: x + attn(norm(x)), then + mlp(norm(x))."""

    def __init__(self, config: LlamaConfig, *, rngs=None):
        super().__init__()
        self.self_attn = LlamaAttention(config, rngs=rngs)
        if config.num_experts:
            from pdx.models.llama._moe import LlamaMoE

            self.mlp = LlamaMoE(config, rngs=rngs)
        else:
            self.mlp = LlamaMLP(config, rngs=rngs)
        self.input_layernorm = RMSNorm(config.hidden_size, epsilon=config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, epsilon=config.rms_norm_eps)

    def forward(self, x, cos, sin, segment_ids=None):
        x = constrain(x, _ACTIVATION)
        x = constrain(x + self.self_attn(self.input_layernorm(x), cos, sin, segment_ids), _ACTIVATION)
        return constrain(x + self.mlp(self.post_attention_layernorm(x)), _ACTIVATION)

    def decode(self, x, cos, sin, cache, index):
        attn, cache = self.self_attn.decode(self.input_layernorm(x), cos, sin, cache, index)
        x = x + attn
        return x + self.mlp(self.post_attention_layernorm(x)), cache

    def paged_decode(self, x, cos, sin, pages, *tables, gather=False):
        attn, pages = self.self_attn.paged_decode(self.input_layernorm(x), cos, sin, pages, *tables, gather=gather)
        x = x + attn
        return x + self.mlp(self.post_attention_layernorm(x)), pages


class LlamaModel(Layer):
    """Token embedding, decoder layers, final RMSNorm -> hidden states (B, S, hidden).

    `layers` is a `LayerList` (one Hugging Face name per layer, run in a
    Python loop) or, with `config.scan_layers`, a `LayerStack` (weights
    stored stacked, run with one `lax.scan`).
    """

    def __init__(self, config: LlamaConfig, *, rngs=None):
        super().__init__()
        self.config = config
        self.embed_tokens = Embedding(config.vocab_size, config.hidden_size,
                                      weight_attr=ParamAttr(initializer=Normal(0.0, 0.02)), rngs=rngs)
        layers = [LlamaDecoderLayer(config, rngs=rngs) for _ in range(config.num_hidden_layers)]
        self.layers = LayerStack(layers) if config.scan_layers else LayerList(layers)
        self.norm = RMSNorm(config.hidden_size, epsilon=config.rms_norm_eps)

    def forward(self, input_ids, positions=None, segment_ids=None):
        """Hidden states of `input_ids` (B, S). Packed rows pass `segment_ids` (B, S) (a token attends
        only to its own document) and `positions` (B, S) restarting at 0 in each document."""
        c = self.config
        if positions is None:
            positions = jnp.arange(input_ids.shape[-1])[None, :]
        cos, sin = rope_tables(positions, c.head_dim, c.rope_theta)
        x = constrain(self.embed_tokens(input_ids), _ACTIVATION)
        extra = () if segment_ids is None else (segment_ids,)
        x = run_layers(self.layers, x, cos, sin, *extra, scan=c.scan_layers, policy=c.recompute)
        return self.norm(x)

    def decode(self, input_ids, cache, index):
        """Run input_ids (B, S) at positions index.. (a scalar, or (B,) per row) with the KV cache."""
        c = self.config
        positions = jnp.asarray(index)[..., None] + jnp.arange(input_ids.shape[-1])
        positions = positions if positions.ndim == 2 else positions[None, :]
        cos, sin = rope_tables(positions, c.head_dim, c.rope_theta)
        x = self.embed_tokens(input_ids)
        if isinstance(self.layers, LayerStack):  # cache: (keys, values), each (L, B, kv_heads, T, head_dim)
            x, new_cache = self.layers.scan(lambda layer, h, c: layer.decode(h, cos, sin, c, index), x, cache)
            return self.norm(x), new_cache
        new_cache = []
        for layer, layer_cache in zip(self.layers, cache):
            x, layer_cache = layer.decode(x, cos, sin, layer_cache, index)
            new_cache.append(layer_cache)
        return self.norm(x), new_cache

    def paged_forward(self, input_ids, positions, pages, slot_mapping, block_tables, context_lens, *, gather=False):
        """Hidden states of input_ids (B, T) at `positions` (B, T) over the paged KV cache; the updated pages.

        With `gather`, the pages are only read and the new tokens' keys/values
        come back instead, in the pages' layout (see `LlamaForCausalLM.write_pages`).
        """
        c = self.config
        cos, sin = rope_tables(positions, c.head_dim, c.rope_theta)
        x = self.embed_tokens(input_ids)
        tables = (slot_mapping, block_tables, context_lens)
        if isinstance(self.layers, LayerStack):  # pages: (keys, values), each (L, num_blocks, block_size, kv_heads, D)
            x, pages = self.layers.scan(lambda layer, h, p: layer.paged_decode(h, cos, sin, p, *tables, gather=gather),
                                        x, pages)
            return self.norm(x), pages
        new_pages = []
        for layer, layer_pages in zip(self.layers, pages):
            x, layer_pages = layer.paged_decode(x, cos, sin, layer_pages, *tables, gather=gather)
            new_pages.append(layer_pages)
        return self.norm(x), new_pages


class LlamaForCausalLM(Layer):
    """LLaMA decoder with a language-model head: input ids (B, S) -> logits (B, S, vocab).

    Args:
      config: a `LlamaConfig` (or a preset name: "tiny", "125m", "1b", "7b").
      rngs: keyword-only seed / key for parameter initialization.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> from pdx.models.llama import LlamaForCausalLM
      >>> model = LlamaForCausalLM("tiny")
      >>> model(jnp.zeros((2, 8), jnp.int32)).shape
      (2, 8, 256)
    """

    def __init__(self, config: LlamaConfig | str, *, rngs=None):
        super().__init__()
        if isinstance(config, str):
            config = LlamaConfig.from_preset(config)
        if not isinstance(config, LlamaConfig):
            raise TypeError(f"LlamaForCausalLM: config must be a LlamaConfig or a preset name; got {type(config).__name__}")
        self.config = config
        self.model = LlamaModel(config, rngs=rngs)
        if not config.tie_word_embeddings:
            self.lm_head = _linear(config.hidden_size, config.vocab_size, (axes.EMBED, axes.VOCAB), rngs)

    def head(self, hidden):
        """Logits from hidden states (the tied embedding transposed, or lm_head)."""
        if self.config.tie_word_embeddings:
            return hidden @ self.model.embed_tokens.weight[...].T
        return self.lm_head(hidden)

    def forward(self, input_ids, positions=None, segment_ids=None):
        return self.head(self.model(input_ids, positions, segment_ids))

    def loss(self, input_ids, labels, *, chunk_size: int | None = 8192, ignore_index: int = -100, positions=None,
             segment_ids=None):
        """Next-token cross-entropy of `labels` (B, S) given `input_ids` (B, S), averaged
        over the tokens whose label is not `ignore_index` (the language-model
        convention; Paddle's `F.cross_entropy` mean divides by all tokens).

        With `chunk_size`, the head and the loss run fused over vocabulary
        chunks (`pdx.kernels.linear_softmax_cross_entropy`): the (B*S, vocab)
        logits are never built, which is most of the activation memory at a
        128k vocabulary. `chunk_size=None` computes the logits and
        `F.cross_entropy`. Packed rows pass `positions` and `segment_ids`
        (see `pdx.text.PackedDataset`; its labels are -100 across documents).

        Example:
          >>> import jax.numpy as jnp, pdx
          >>> from pdx.models.llama import LlamaForCausalLM
          >>> ids = jnp.zeros((2, 8), jnp.int32)
          >>> float(LlamaForCausalLM("tiny").loss(ids, ids, chunk_size=64)) > 0
          True
        """
        hidden = self.model(input_ids, positions, segment_ids)
        labels = labels.reshape(-1)
        if chunk_size is None:
            logits = self.head(hidden).astype(jnp.float32)
            per_token = F.cross_entropy(logits.reshape([-1, logits.shape[-1]]), labels, ignore_index=ignore_index,
                                        reduction="none").reshape(-1)
        else:
            weight = (self.model.embed_tokens.weight[...].T if self.config.tie_word_embeddings
                      else self.lm_head.weight[...])
            per_token = kernels.linear_softmax_cross_entropy(hidden.reshape(-1, hidden.shape[-1]), weight, labels,
                                                             ignore_index=ignore_index, chunk_size=chunk_size)
        kept = (labels != ignore_index).astype(jnp.float32)
        loss = per_token.sum() / jnp.maximum(kept.sum(), 1.0)
        if self.config.num_experts:  # the routers' load-balancing loss, kept by each MoE layer during the forward
            aux = sum(layer.mlp.aux_loss[...] for layer in self.model.layers)
            loss = loss + self.config.router_aux_loss_coef * aux / len(self.model.layers)
        return loss

    def init_cache(self, batch_size: int, max_length: int, dtype=jnp.float32):
        """An empty KV cache: per layer (keys, values), each (B, kv_heads, max_length, head_dim).

        With `scan_layers` the layers' caches are stacked instead: one (keys,
        values) pair, each (num_layers, B, kv_heads, max_length, head_dim).
        """
        c = self.config
        if max_length > c.max_position_embeddings:
            raise ValueError(f"init_cache: max_length={max_length} exceeds max_position_embeddings="
                             f"{c.max_position_embeddings}; shorten the prompt or max_new_tokens")
        shape = (batch_size, c.num_key_value_heads, max_length, c.head_dim)
        if c.scan_layers:
            return (jnp.zeros((c.num_hidden_layers,) + shape, dtype), jnp.zeros((c.num_hidden_layers,) + shape, dtype))
        return [(jnp.zeros(shape, dtype), jnp.zeros(shape, dtype)) for _ in range(c.num_hidden_layers)]

    def decode(self, input_ids, cache, index):
        """Logits of input_ids placed at positions index.. with the cache, and the updated cache."""
        hidden, cache = self.model.decode(input_ids, cache, index)
        return self.head(hidden), cache

    def init_pages(self, num_blocks: int, block_size: int, dtype=jnp.float32):
        """An empty paged KV cache: per layer (keys, values), each (num_blocks, block_size, kv_heads, head_dim).

        With `scan_layers` one stacked pair, each (num_layers, num_blocks, block_size, kv_heads, head_dim).
        """
        c = self.config
        shape = (num_blocks, block_size, c.num_key_value_heads, c.head_dim)
        if c.scan_layers:
            shape = (c.num_hidden_layers,) + shape
            return jnp.zeros(shape, dtype), jnp.zeros(shape, dtype)
        return [(jnp.zeros(shape, dtype), jnp.zeros(shape, dtype)) for _ in range(c.num_hidden_layers)]

    def paged_forward(self, input_ids, positions, pages, slot_mapping, block_tables, context_lens):
        """Logits of input_ids (B, T) over a paged KV cache, and the updated pages.

        Row b holds the last T tokens of sequence b (real tokens last, padding
        first): `positions` (B, T) their positions, `slot_mapping` (B, T) the
        flat slots (block_id * block_size + offset, -1 for padding) their
        keys/values go to, `block_tables` (B, max_blocks) the sequence's
        blocks in order and `context_lens` (B,) its tokens including these.
        `pages` comes from `init_pages`; see `pdx.kernels.paged_attention`.
        """
        hidden, pages = self.model.paged_forward(input_ids, positions, pages, slot_mapping, block_tables, context_lens)
        return self.head(hidden), pages

    def write_pages(self, pages, new, slot_mapping):
        """Write the keys/values that `paged_forward(..., gather=True)` returned into the pages at `slot_mapping`.

        Run it as its own compiled call with the pages donated: then the pool
        is updated in place (a program that also reads the pool copies it).
        """
        if self.config.scan_layers:
            return jax.vmap(lambda kp, vp, k, v: kernels.write_kv_pages(kp, vp, k, v, slot_mapping))(*pages, *new)
        return [kernels.write_kv_pages(kp, vp, k, v, slot_mapping) for (kp, vp), (k, v) in zip(pages, new)]

    def generate(self, input_ids, max_new_tokens: int = 20, **kwargs):
        """Continue `input_ids` (B, P); see `pdx.models.llama.generate` for the options."""
        from pdx.models.llama._generation import generate

        return generate(self, input_ids, max_new_tokens, **kwargs)
