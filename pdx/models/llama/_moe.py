"""Mixture-of-experts feed-forward (Mixtral-style): a top-k router over SwiGLU experts, GShard's dispatch.

Tokens (T of them: the batch flattened) pick their top-k experts; within an
expert, tokens are queued in order (first choices before second choices)
and the first `capacity` are kept. Dispatch and combine are one-hot
(T, experts, capacity) tensors, so the expert computation is three batched
einsums over an (experts, capacity, hidden) block whose expert dimension sits
on the "ep" mesh axis; with the batch split over "ep" too, the compiler moves
tokens to their experts and back with all-to-alls. `capacity_factor=None` is
dropless (capacity = T, memory T^2 * experts: for small batches and tests);
a factor c keeps ceil(T * k / experts * c) per expert and drops the rest (the
residual carries them). The Switch load-balancing loss (experts x mean
routing probability x fraction of routed tokens, per expert) is kept on the
layer for `LlamaForCausalLM.loss`.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

import pdx.nn.functional as F
from pdx.nn import Buffer, Layer, Linear, ParamAttr, axes
from pdx.nn.initializer import Normal

__all__ = ["LlamaMoE"]


class LlamaMoE(Layer):
    """Top-k routed SwiGLU experts in place of LlamaMLP (config.num_experts > 0).

    Parameters: `gate` (router, [hidden, experts]), `experts_gate_proj` /
    `experts_up_proj` ([experts, hidden, intermediate]), `experts_down_proj`
    ([experts, intermediate, hidden]).
    """

    def __init__(self, config, *, rngs=None):
        super().__init__()
        if rngs is not None and not isinstance(rngs, nnx.Rngs):
            rngs = nnx.Rngs(params=rngs)
        h = config.hidden_size
        i = config.moe_intermediate_size or config.intermediate_size
        e = config.num_experts
        self.num_experts, self.top_k, self.capacity_factor = e, config.num_experts_per_tok, config.capacity_factor
        self.gate = Linear(h, e, weight_attr=ParamAttr(initializer=Normal(0.0, 0.02)), bias_attr=False,
                           axis_names=(axes.EMBED, None), rngs=rngs)
        init = ParamAttr(initializer=Normal(0.0, 0.02))
        self.experts_gate_proj = self.create_parameter((e, h, i), attr=init, axis_names=(axes.EXPERT, axes.EMBED, axes.MLP),
                                                       rngs=rngs)
        self.experts_up_proj = self.create_parameter((e, h, i), attr=init, axis_names=(axes.EXPERT, axes.EMBED, axes.MLP),
                                                     rngs=rngs)
        self.experts_down_proj = self.create_parameter((e, i, h), attr=init, axis_names=(axes.EXPERT, axes.MLP, axes.EMBED),
                                                       rngs=rngs)
        self.aux_loss = Buffer(jnp.zeros((), jnp.float32), persistable=False)

    def forward(self, x):
        from pdx.parallel import constrain

        b, s, h = x.shape
        tokens = x.reshape(b * s, h)
        t, e, k = tokens.shape[0], self.num_experts, self.top_k
        logits = self.gate(tokens).astype(jnp.float32)                             # (T, E)
        probs = jax.nn.softmax(logits, axis=-1)
        top_logits, top_idx = jax.lax.top_k(logits, k)                             # (T, k)
        weights = jax.nn.softmax(top_logits, axis=-1)                               # renormalized over the k
        choice = jax.nn.one_hot(top_idx, e, dtype=jnp.float32)                      # (T, k, E)
        capacity = t if self.capacity_factor is None else max(1, math.ceil(t * k / e * self.capacity_factor))
        # queue position of each (token, choice) in its expert: first choices of all tokens, then second ...
        order = choice.transpose(1, 0, 2).reshape(k * t, e)                          # (k*T, E)
        position = (jnp.cumsum(order, axis=0) - 1.0).reshape(k, t, e).transpose(1, 0, 2)
        position = (position * choice).sum(-1)                                      # (T, k)
        kept = position < capacity
        slot = jax.nn.one_hot(jnp.where(kept, position, 0).astype(jnp.int32), capacity, dtype=jnp.float32)
        dispatch = jnp.einsum("tke,tkc->tec", choice * kept[..., None], slot)       # (T, E, C)
        combine = jnp.einsum("tke,tkc->tec", choice * (weights * kept)[..., None], slot)
        expert_in = jnp.einsum("tec,th->ech", dispatch.astype(x.dtype), tokens)
        expert_in = constrain(expert_in, (axes.EXPERT, None, axes.EMBED))
        gate = jnp.einsum("ech,ehi->eci", expert_in, self.experts_gate_proj[...])
        up = jnp.einsum("ech,ehi->eci", expert_in, self.experts_up_proj[...])
        out = jnp.einsum("eci,eih->ech", F.silu(gate) * up, self.experts_down_proj[...])
        out = constrain(out, (axes.EXPERT, None, axes.EMBED))
        y = jnp.einsum("tec,ech->th", combine.astype(x.dtype), out)
        # Switch load balancing: E * sum_e (share of routed (token, choice) pairs) * (mean probability)
        share = choice.sum((0, 1)) / (t * k)
        self.aux_loss.set_value(e * jnp.sum(share * probs.mean(0)))
        return y.reshape(b, s, h)
