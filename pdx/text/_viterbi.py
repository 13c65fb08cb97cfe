"""Viterbi decoding of a linear-chain CRF (Paddle's `paddle.text.viterbi_decode` / `ViterbiDecoder`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pdx.nn import Layer

__all__ = ["ViterbiDecoder", "viterbi_decode"]


def viterbi_decode(potentials, transition_params, lengths, include_bos_eos_tag: bool = True, name=None):
    """Highest-scoring tag sequence per row: (scores [B], paths [B, max(lengths)]).

    Args:
      potentials: emissions [B, T, num_tags].
      transition_params: [num_tags, num_tags]; entry (i, j) scores tag i -> tag j.
      lengths: [B] sequence lengths (positions past a row's length are ignored; its path is 0 there).
      include_bos_eos_tag: the last tag is the start tag (its row scores the first tag) and the
        second to last the stop tag (its row scores the last tag, Paddle's kernel's convention).

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> scores, path = pdx.text.viterbi_decode(jnp.array([[[0., 2.], [3., 0.]]]), jnp.zeros((2, 2)),
      ...                                        jnp.array([2]), False)
      >>> path.tolist(), float(scores[0])
      ([[1, 0]], 5.0)
    """
    potentials = jnp.asarray(potentials)
    trans = jnp.asarray(transition_params, potentials.dtype)
    lengths = jnp.asarray(lengths).astype(jnp.int32)
    if potentials.ndim != 3 or trans.shape != (potentials.shape[2],) * 2 or lengths.shape != potentials.shape[:1]:
        raise ValueError(f"viterbi_decode: need potentials [B, T, N], transition_params [N, N], lengths [B]; got "
                         f"{tuple(potentials.shape)}, {tuple(trans.shape)}, {tuple(lengths.shape)}")
    b, t, n = potentials.shape
    alpha = potentials[:, 0]
    if include_bos_eos_tag:
        alpha = alpha + trans[-1][None]

    def step(alpha, inputs):
        emit, i = inputs
        scores = alpha[:, :, None] + trans[None]                       # (B, from, to)
        best = jnp.argmax(scores, axis=1).astype(jnp.int32)            # (B, to)
        new = jnp.max(scores, axis=1) + emit
        live = (i < lengths)[:, None]
        return jnp.where(live, new, alpha), jnp.where(live, best, jnp.arange(n, dtype=jnp.int32)[None])

    alpha, back = jax.lax.scan(step, alpha, (jnp.swapaxes(potentials[:, 1:], 0, 1), jnp.arange(1, t)))
    if include_bos_eos_tag:
        alpha = alpha + trans[-2][None]
    scores = jnp.max(alpha, axis=1)
    last = jnp.argmax(alpha, axis=1).astype(jnp.int32)

    def trace(tag, pointers):
        prev = jnp.take_along_axis(pointers, tag[:, None], axis=1)[:, 0]
        return prev, tag

    first, tail = jax.lax.scan(trace, last, back, reverse=True)
    paths = jnp.concatenate([first[:, None], jnp.swapaxes(tail, 0, 1)], axis=1) if t > 1 else last[:, None]
    paths = jnp.where(jnp.arange(t)[None] < lengths[:, None], paths, 0)
    if not isinstance(lengths, jax.core.Tracer):
        paths = paths[:, : max(1, int(np.max(np.asarray(lengths))))]
    return scores, paths


class ViterbiDecoder(Layer):
    """`viterbi_decode` with the transitions held by the layer (Paddle's `paddle.text.ViterbiDecoder`).

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> decoder = pdx.text.ViterbiDecoder(jnp.zeros((3, 3)), include_bos_eos_tag=False)
      >>> decoder(jnp.ones((1, 4, 3)), jnp.array([4]))[1].shape
      (1, 4)
    """

    def __init__(self, transitions, include_bos_eos_tag: bool = True, name=None):
        super().__init__()
        self.transitions = jnp.asarray(transitions)
        self.include_bos_eos_tag = include_bos_eos_tag

    def forward(self, potentials, lengths):
        return viterbi_decode(potentials, self.transitions, lengths, self.include_bos_eos_tag)
