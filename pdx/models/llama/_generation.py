"""Autoregressive generation with a KV cache: greedy search and top-k / top-p sampling."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

import pdx


@pdx.jit
def _decode(model, input_ids, cache, index):
    logits, cache = model.decode(input_ids, cache, index)
    return logits[:, -1].astype(jnp.float32), cache


@functools.partial(jax.jit, static_argnames=("greedy", "top_k"))
def _pick(logits, key, *, greedy: bool, temperature, top_k: int, top_p):
    """Next token (B,) from the last position's logits (B, V)."""
    if greedy:
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)
    logits = logits / temperature
    if top_k > 0:
        kth = jax.lax.top_k(logits, top_k)[0][:, -1:]
        logits = jnp.where(logits < kth, -jnp.inf, logits)
    # top-p: keep the smallest set of tokens whose probability mass reaches top_p
    order = jnp.argsort(-logits, axis=-1)
    sorted_logits = jnp.take_along_axis(logits, order, axis=-1)
    probs = jax.nn.softmax(sorted_logits, axis=-1)
    before = jnp.cumsum(probs, axis=-1) - probs
    sorted_logits = jnp.where(before >= top_p, -jnp.inf, sorted_logits)
    choice = jax.random.categorical(key, sorted_logits, axis=-1)
    return jnp.take_along_axis(order, choice[:, None], axis=-1)[:, 0].astype(jnp.int32)


def generate(model, input_ids, max_new_tokens: int = 20, *, decode_strategy: str = "greedy_search",
             temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0, eos_token_id: int | None = None,
             key=None):
    """Continue prompts with a KV cache (PaddleNLP's `decode_strategy` names).

    The prompt is run once (prefill), then one token at a time; both steps
    are compiled once per shape.

    Args:
      model: a `LlamaForCausalLM`.
      input_ids: (B, P) int prompt tokens.
      max_new_tokens: tokens to add.
      decode_strategy: "greedy_search" or "sampling".
      temperature, top_k, top_p: sampling controls (top_k=0 and top_p=1.0 disable them).
      eos_token_id: stop a row once it produced this token (later positions repeat it).
      key: jax PRNG key for sampling (default: from pdx's global generator).

    Returns:
      (B, P + max_new_tokens) int32 tokens.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> from pdx.models.llama import LlamaForCausalLM
      >>> model = LlamaForCausalLM("tiny")
      >>> model.generate(jnp.array([[1, 2, 3]]), max_new_tokens=4).shape
      (1, 7)
    """
    if decode_strategy not in ("greedy_search", "sampling"):
        raise ValueError(f"generate: decode_strategy must be 'greedy_search' or 'sampling'; got {decode_strategy!r}")
    if not (isinstance(max_new_tokens, int) and max_new_tokens >= 1):
        raise ValueError(f"generate: max_new_tokens must be a positive int; got {max_new_tokens!r}")
    if not 0.0 < top_p <= 1.0 or temperature <= 0 or top_k < 0:
        raise ValueError(f"generate: need 0 < top_p <= 1, temperature > 0, top_k >= 0; got top_p={top_p}, "
                         f"temperature={temperature}, top_k={top_k}")
    ids = jnp.asarray(input_ids, jnp.int32)
    if ids.ndim != 2:
        raise ValueError(f"generate: input_ids must be (batch, prompt_len); got shape {ids.shape}")
    greedy = decode_strategy == "greedy_search"
    if key is None and not greedy:
        key = pdx._random.next_key(None, op="generate")
    key = jax.random.key(0) if key is None else key
    batch, prompt = ids.shape
    cache = model.init_cache(batch, prompt + max_new_tokens)
    was_training = model.training
    model.eval()
    try:
        logits, cache = _decode(model, ids, cache, jnp.int32(0))
        out = [ids]
        done = jnp.zeros((batch,), bool)
        for step in range(max_new_tokens):
            key, sub = jax.random.split(key)
            token = _pick(logits, sub, greedy=greedy, temperature=jnp.float32(temperature), top_k=int(top_k),
                          top_p=jnp.float32(top_p))
            if eos_token_id is not None:
                token = jnp.where(done, eos_token_id, token)
                done = done | (token == eos_token_id)
            out.append(token[:, None])
            if step + 1 < max_new_tokens:
                logits, cache = _decode(model, token[:, None], cache, jnp.int32(prompt + step))
    finally:
        if was_training:
            model.train()
    return jnp.concatenate(out, axis=1)


