"""Token choice for LLMEngine, inside compiled functions: plain sampling and speculative verification.

Every row carries its own settings (temperature, top-k, top-p; temperature
0 is greedy) and its own random stream: the key of a row's draw is
`fold_in(key(seed), counter)` (counter = tokens the request has so far), with
a tag folded in for the uniform and residual draws of speculative decoding,
so a request's tokens depend only on its seed and position, never on its
neighbours in the batch.

Speculative verification (`verify`) is the standard rejection rule: draft
token d_j, proposed with probability q_j(d_j), is kept with probability
min(1, p_j(d_j) / q_j(d_j)) under the target's distribution p_j; the first
rejected position draws from normalize(max(0, p_j - q_j)); when every draft
is kept, one more token comes from the target's last distribution. The
tokens produced are distributed exactly as the target alone would sample
them. A draft without probabilities (prompt lookup) is a point mass: q = 1
at d_j. Greedy rows keep a draft token only if it is the target's argmax,
and the correction is the argmax: exactly plain greedy decoding.

Example:
  >>> import jax.numpy as jnp
  >>> from pdx.models.llama._sampling import sample
  >>> logits = jnp.array([[0.0, 5.0, 1.0]])
  >>> int(sample(logits, jnp.zeros(1, jnp.uint32), jnp.zeros(1, jnp.uint32), jnp.zeros(1),
  ...            jnp.zeros(1, jnp.int32), jnp.ones(1))[0][0])
  1
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax

__all__ = ["sample", "target_probs", "verify"]

_UNIFORM, _RESIDUAL, _DRAFT = 1, 2, 3   # tags folded into a row's key for the draws of speculative decoding


def _keys(seeds, counters, tag: int = 0):
    keys = jax.vmap(lambda s, c: jax.random.fold_in(jax.random.key(s), c))(seeds, counters)
    return keys if not tag else jax.vmap(lambda k: jax.random.fold_in(k, tag))(keys)


def _ranked(logits, temperature, top_k, top_p):
    """(order, ranked): the vocabulary sorted by scaled logit, and the sorted logits with top-k/top-p cut to -inf."""
    scaled = logits / jnp.maximum(temperature, 1e-6)[:, None]
    order = jnp.argsort(-scaled, axis=-1)
    ranked = jnp.take_along_axis(scaled, order, axis=-1)
    rank = jnp.arange(logits.shape[-1])[None, :]
    ranked = jnp.where((top_k[:, None] > 0) & (rank >= top_k[:, None]), -jnp.inf, ranked)
    probs = jax.nn.softmax(ranked, axis=-1)
    before = jnp.cumsum(probs, axis=-1) - probs
    return order, jnp.where(before >= top_p[:, None], -jnp.inf, ranked)


def target_probs(logits, temperature, top_k, top_p):
    """The distribution (rows, V) a row samples from, in vocabulary order (one-hot argmax at temperature 0)."""
    order, ranked = _ranked(logits, temperature, top_k, top_p)
    rows = jnp.arange(logits.shape[0])[:, None]
    probs = jnp.zeros_like(logits).at[rows, order].set(jax.nn.softmax(ranked, axis=-1))
    greedy = jax.nn.one_hot(jnp.argmax(logits, axis=-1), logits.shape[-1], dtype=logits.dtype)
    return jnp.where((temperature == 0)[:, None], greedy, probs)


def _top(raw, token, top_n: int):
    """The chosen token's log-probability and the `top_n` best (log_softmax of the raw logits)."""
    logp = jax.nn.log_softmax(raw, axis=-1)
    best, best_ids = jax.lax.top_k(logp, top_n)
    return jnp.take_along_axis(logp, token[..., None], axis=-1)[..., 0], best, best_ids


@functools.partial(jax.jit, static_argnames="top_n")
def sample(logits, seeds, counters, temperature, top_k, top_p, mask=None, *, top_n=0):
    """Next token per row with that row's settings; temperature 0 rows take the argmax.

    `mask` (rows, V) bool keeps only the allowed tokens. With `top_n`, also
    the chosen token's log-probability and the `top_n` best (of the unmasked
    logits). Returns (token, chosen, best, best_ids), the last three None
    without `top_n`.
    """
    raw = logits
    if mask is not None:
        logits = jnp.where(mask, logits, -jnp.inf)
    greedy = jnp.argmax(logits, axis=-1).astype(jnp.int32)

    def drawn(logits):
        order, ranked = _ranked(logits, temperature, top_k, top_p)
        choice = jax.vmap(jax.random.categorical)(_keys(seeds, counters), ranked)
        sampled = jnp.take_along_axis(order, choice[:, None], axis=-1)[:, 0].astype(jnp.int32)
        return jnp.where(temperature == 0, greedy, sampled)

    # a step of greedy rows only skips the vocabulary sort (most of a sampling call's time)
    token = lax.cond(jnp.any(temperature != 0), drawn, lambda _: greedy, logits)
    if not top_n:
        return token, None, None, None
    return (token, *_top(raw, token, top_n))


@jax.jit
def sample_draft(logits, seeds, counters, temperature, top_k, top_p):
    """A draft model's proposal per row and the distribution q (rows, V) it was drawn from."""
    q = target_probs(logits, temperature, top_k, top_p)
    drawn = jax.vmap(lambda k, p: jax.random.categorical(k, jnp.log(p)))(_keys(seeds, counters, _DRAFT), q)
    token = jnp.where(temperature == 0, jnp.argmax(logits, axis=-1), drawn).astype(jnp.int32)
    return token, q


@functools.partial(jax.jit, static_argnames="top_n")
def verify(logits, drafts, num_drafts, q, seeds, counters, temperature, top_k, top_p, mask=None, *, top_n=0):
    """Check each row's drafts against the target; (kept, tokens, chosen, best, best_ids).

    logits (B, k+1, V): the target's logits after the row's last token and
    after each of its drafts; drafts (B, k) int, of which the first
    num_drafts[b] are real; q (B, k, V) the draft distributions, or None for
    point-mass drafts. Row b emits tokens[b, :kept[b] + 1]: its first kept[b]
    drafts and one token from the target (the correction at the first
    rejection, or the next token when every draft was kept). `mask` (B, V)
    limits every position of a row (rows with a constraint carry no drafts).
    """
    b, t, v = logits.shape
    k = t - 1
    raw = logits
    if mask is not None:
        logits = jnp.where(mask[:, None, :], logits, -jnp.inf)
    flat = lambda x: jnp.repeat(x, t, axis=0)  # noqa: E731 - per-row settings for every position
    p = target_probs(logits.reshape(b * t, v), flat(temperature), flat(top_k), flat(top_p)).reshape(b, t, v)
    if q is None:
        q = jax.nn.one_hot(drafts, v, dtype=p.dtype)
    steps = counters[:, None] + jnp.arange(t, dtype=counters.dtype)[None, :]
    uniform = jax.vmap(jax.vmap(lambda key: jax.random.uniform(key)))(
        jax.vmap(lambda s, c: _keys(jnp.full(t, s), c, _UNIFORM))(seeds, steps))[:, :k]
    p_draft = jnp.take_along_axis(p[:, :k], drafts[..., None], axis=-1)[..., 0]
    q_draft = jnp.take_along_axis(q, drafts[..., None], axis=-1)[..., 0]
    greedy = temperature[:, None] == 0
    ok = jnp.where(greedy, p_draft > 0.5, uniform * q_draft < p_draft)   # greedy p is one-hot at the argmax
    ok &= jnp.arange(k)[None, :] < num_drafts[:, None]
    kept = jnp.sum(jnp.cumprod(ok, axis=-1), axis=-1).astype(jnp.int32)
    p_last = jnp.take_along_axis(p, kept[:, None, None], axis=1)[:, 0]
    q_last = jnp.take_along_axis(jnp.pad(q, ((0, 0), (0, 1), (0, 0))), kept[:, None, None], axis=1)[:, 0]
    rejected = (kept < num_drafts)[:, None]
    residual = jnp.where(rejected, jnp.maximum(p_last - q_last, 0.0), p_last)
    residual = jnp.where(jnp.sum(residual, axis=-1, keepdims=True) > 0, residual, p_last)
    last_keys = _keys(seeds, counters + kept.astype(counters.dtype), _RESIDUAL)
    drawn = jax.vmap(lambda key, r: jax.random.categorical(key, jnp.log(r)))(last_keys, residual)
    last = jnp.where(temperature == 0, jnp.argmax(p_last, axis=-1), drawn).astype(jnp.int32)
    position = jnp.arange(t)[None, :]
    tokens = jnp.where(position < kept[:, None], jnp.pad(drafts, ((0, 0), (0, 1))), last[:, None]).astype(jnp.int32)
    if not top_n:
        return kept, tokens, None, None, None
    return (kept, tokens, *_top(raw, tokens, top_n))
