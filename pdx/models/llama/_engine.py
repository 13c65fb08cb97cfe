"""LLMEngine: continuous batching over a slot-based KV cache, with compiled prefill and decode steps.

The KV cache is allocated once: `max_slots` rows of `max_len` positions (the
memory budget). A request waiting for a free slot is admitted between decode
steps: its prompt runs alone (prefill, padded to a power-of-two bucket so a
handful of shapes compile once) into its slot's row, and from then on it
advances one token per decode step together with every other active slot,
each row at its own position (`LlamaForCausalLM.decode` with a per-row
index). A finished request frees its slot at once, so requests join and
leave the running batch between steps. Sampling (temperature, top-k, top-p,
greedy at temperature 0) is per row inside one compiled function; each
request's random stream depends only on its seed, so a request decodes the
same alone or in a crowd.

One worker thread owns the cache and runs the loop; `submit` may be called
from any thread and reports tokens through the request's callback.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

__all__ = ["LLMEngine", "SamplingParams"]


@dataclasses.dataclass(frozen=True)
class SamplingParams:
    """Per-request decoding settings (OpenAI's names): temperature 0 = greedy."""

    max_tokens: int = 16
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    stop: tuple = ()
    seed: int = 0

    def check(self) -> None:
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive int; got {self.max_tokens!r}")
        if not isinstance(self.temperature, (int, float)) or self.temperature < 0:
            raise ValueError(f"temperature must be a number >= 0; got {self.temperature!r}")
        if not isinstance(self.top_p, (int, float)) or not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1]; got {self.top_p!r}")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            raise ValueError(f"top_k must be an int >= 0; got {self.top_k!r}")
        if not all(isinstance(s, str) and s for s in self.stop) or len(self.stop) > 8:
            raise ValueError(f"stop must be up to 8 non-empty strings; got {list(self.stop)!r}")


class Request:
    """One generation: prompt ids, settings, and what was produced (filled by the engine)."""

    def __init__(self, prompt_ids, params: SamplingParams, on_event):
        self.prompt_ids = list(prompt_ids)
        self.params = params
        self.on_event = on_event          # on_event(kind, payload): ("token", text_delta) / ("done", reason)
        self.tokens: list[int] = []
        self.text = ""
        self.finish_reason = None
        self.cancelled = False
        self.arrived = time.monotonic()
        self.first_token_s = None


def _prefill_fn(graphdef, state, cache, slot, tokens, last):
    """Run one padded prompt (1, P) into row `slot` of the cache; logits of its last real token."""
    model = nnx.merge(graphdef, state)
    axis = 1 if model.config.scan_layers else 0
    row = jax.tree.map(lambda c: jax.lax.dynamic_slice_in_dim(c, slot, 1, axis=axis), cache)
    logits, row = model.decode(tokens, row, jnp.int32(0))
    cache = jax.tree.map(lambda c, r: jax.lax.dynamic_update_slice_in_dim(c, r, slot, axis=axis), cache, row)
    return logits[0, last].astype(jnp.float32), cache


def _decode_fn(graphdef, state, cache, tokens, index):
    """One token for every slot: tokens (S, 1) at positions index (S,) -> logits (S, V)."""
    logits, cache = nnx.merge(graphdef, state).decode(tokens, cache, index)
    return logits[:, -1].astype(jnp.float32), cache


# The cache is donated: each step updates it in place instead of copying max_slots x max_len per layer.
_prefill = jax.jit(_prefill_fn, static_argnums=0, donate_argnums=2)
_decode = jax.jit(_decode_fn, static_argnums=0, donate_argnums=2)


@jax.jit
def _sample(logits, seeds, counters, temperature, top_k, top_p):
    """Next token per row with that row's settings; temperature 0 rows take the argmax.

    Row r draws with key fold_in(key(seeds[r]), counters[r]): a request's stream
    depends on its seed and how many tokens it has, not on its neighbours.
    """
    keys = jax.vmap(lambda s, c: jax.random.fold_in(jax.random.key(s), c))(seeds, counters)
    greedy = jnp.argmax(logits, axis=-1).astype(jnp.int32)
    scaled = logits / jnp.maximum(temperature, 1e-6)[:, None]
    order = jnp.argsort(-scaled, axis=-1)
    ranked = jnp.take_along_axis(scaled, order, axis=-1)
    rank = jnp.arange(logits.shape[-1])[None, :]
    ranked = jnp.where((top_k[:, None] > 0) & (rank >= top_k[:, None]), -jnp.inf, ranked)
    probs = jax.nn.softmax(ranked, axis=-1)
    before = jnp.cumsum(probs, axis=-1) - probs
    ranked = jnp.where(before >= top_p[:, None], -jnp.inf, ranked)
    choice = jax.vmap(lambda k, row: jax.random.categorical(k, row))(keys, ranked)
    sampled = jnp.take_along_axis(order, choice[:, None], axis=-1)[:, 0].astype(jnp.int32)
    return jnp.where(temperature == 0, greedy, sampled)


def _bucket(n: int) -> int:
    return max(8, 1 << (n - 1).bit_length())


class LLMEngine:
    """Continuous-batching generation for a LlamaForCausalLM and its Tokenizer.

    Args:
      model: a `LlamaForCausalLM` (put in eval mode).
      tokenizer: a `pdx.text.Tokenizer` (its EOS ends a request).
      max_slots: requests decoded at once (rows of the KV cache).
      max_len: positions per slot: prompt + generated tokens must fit.
      max_queue: requests waiting for a slot; `submit` raises `QueueFull` beyond.

    Example:
      >>> from pdx.models.llama import LlamaForCausalLM, LLMEngine, SamplingParams
      >>> from pdx.text import train_bpe
      >>> tok = train_bpe(["hello world"] * 20, vocab_size=270)
      >>> engine = LLMEngine(LlamaForCausalLM("tiny"), tok, max_slots=2, max_len=32)
      >>> len(engine.generate(tok.encode("hello"), SamplingParams(max_tokens=4, temperature=0))[0]) <= 4
      True
      >>> engine.close()
    """

    class QueueFull(RuntimeError):
        """All slots are busy and the waiting queue is full."""

    def __init__(self, model, tokenizer, *, max_slots: int = 16, max_len: int = 256, max_queue: int = 256):
        for name, value in (("max_slots", max_slots), ("max_len", max_len), ("max_queue", max_queue)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"LLMEngine: {name} must be a positive int; got {value!r}")
        if max_len > model.config.max_position_embeddings:
            raise ValueError(f"LLMEngine: max_len={max_len} exceeds the model's max_position_embeddings="
                             f"{model.config.max_position_embeddings}")
        model.eval()
        self.model, self.tokenizer = model, tokenizer
        self._graphdef, self._state = nnx.split(model)
        self.max_slots, self.max_len, self.max_queue = max_slots, max_len, max_queue
        self.eos = tokenizer.eos_token_id
        self._cache = model.init_cache(max_slots, max_len)
        self._slots: list[Request | None] = [None] * max_slots
        self._pos = np.zeros(max_slots, np.int32)
        self._last = np.zeros(max_slots, np.int32)
        self._waiting: collections.deque[Request] = collections.deque()
        self._cond = threading.Condition()
        self._stop = False
        self.stats = {"decode_steps": 0, "prefills": 0, "generated_tokens": 0, "finished": 0}
        self._thread = threading.Thread(target=self._loop, name="pdx-llm-engine", daemon=True)
        self._thread.start()

    # -- submitting ----------------------------------------------------------------------------------
    def submit(self, prompt_ids, params: SamplingParams, on_event) -> Request:
        """Queue a request; `on_event(kind, payload)` is called from the engine thread.

        Raises ValueError when prompt + max_tokens does not fit `max_len`, and
        `LLMEngine.QueueFull` when the queue is full.
        """
        params.check()
        n = len(prompt_ids)
        if n == 0:
            raise ValueError("the prompt is empty")
        if n + params.max_tokens > self.max_len:
            raise ValueError(f"prompt ({n} tokens) + max_tokens ({params.max_tokens}) exceeds the context length "
                             f"{self.max_len}; shorten the prompt or lower max_tokens")
        request = Request(prompt_ids, params, on_event)
        with self._cond:
            if len(self._waiting) >= self.max_queue:
                raise LLMEngine.QueueFull(f"{len(self._waiting)} requests are waiting (max_queue={self.max_queue})")
            self._waiting.append(request)
            self._cond.notify()
        return request

    def generate(self, prompt_ids, params: SamplingParams):
        """Blocking helper: (tokens, text, finish_reason) of one request."""
        done = threading.Event()
        request = self.submit(prompt_ids, params, lambda kind, payload: done.set() if kind == "done" else None)
        done.wait()
        return request.tokens, request.text, request.finish_reason

    def load(self) -> dict:
        """Active slots and waiting requests now."""
        with self._cond:
            return {"active": sum(s is not None for s in self._slots), "waiting": len(self._waiting)}

    def close(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify()
        self._thread.join(timeout=30)

    # -- the loop ------------------------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._stop and not self._waiting and all(s is None for s in self._slots):
                    self._cond.wait()
                if self._stop:
                    return
                admitted = []
                for i in range(self.max_slots):
                    if self._slots[i] is None and self._waiting:
                        self._slots[i] = self._waiting.popleft()
                        admitted.append(i)
            try:
                for i in admitted:
                    self._prefill(i)
                if any(s is not None for s in self._slots):
                    self._step()
            except Exception as e:  # a failing model call ends its requests, never the server
                for i, request in enumerate(self._slots):
                    if request is not None:
                        self._finish(i, f"error: {type(e).__name__}: {e}")

    def _pick(self, logits, rows):
        seeds = np.asarray([r.params.seed for r in rows], np.uint32)
        counters = np.asarray([len(r.tokens) for r in rows], np.uint32)
        t = np.asarray([r.params.temperature for r in rows], np.float32)
        k = np.asarray([r.params.top_k for r in rows], np.int32)
        p = np.asarray([r.params.top_p for r in rows], np.float32)
        return np.asarray(_sample(logits, seeds, counters, t, k, p))

    def _prefill(self, i: int) -> None:
        request = self._slots[i]
        n = len(request.prompt_ids)
        padded = np.zeros((1, min(_bucket(n), self.max_len)), np.int32)
        padded[0, :n] = request.prompt_ids
        logits, self._cache = _prefill(self._graphdef, self._state, self._cache, jnp.int32(i), jnp.asarray(padded),
                                       jnp.int32(n - 1))
        self.stats["prefills"] += 1
        self._pos[i] = n
        self._accept(i, int(self._pick(logits[None], [request])[0]))

    def _step(self) -> None:
        live = [i for i, s in enumerate(self._slots) if s is not None]
        tokens = jnp.asarray(self._last[:, None])
        logits, self._cache = _decode(self._graphdef, self._state, self._cache, tokens, jnp.asarray(self._pos))
        self.stats["decode_steps"] += 1
        rows = [self._slots[i] if self._slots[i] is not None else _IDLE for i in range(self.max_slots)]
        picked = self._pick(logits, rows)
        for i in live:
            self._pos[i] += 1
            self._accept(i, int(picked[i]))

    def _accept(self, i: int, token: int) -> None:
        request = self._slots[i]
        if request.cancelled:
            return self._finish(i, "cancelled")
        if request.first_token_s is None:
            request.first_token_s = time.monotonic() - request.arrived
        self.stats["generated_tokens"] += 1
        if token == self.eos:
            return self._finish(i, "stop")
        request.tokens.append(token)
        self._last[i] = token
        text = self.tokenizer.decode(request.tokens)
        if text.endswith("\ufffd"):  # an incomplete UTF-8 sequence: wait for its next byte
            delta = ""
        else:
            delta, request.text = text[len(request.text):], text
        for stop in request.params.stop:
            cut = request.text.find(stop)
            if cut != -1:
                delta = delta[: max(0, len(delta) - (len(request.text) - cut))]
                request.text = request.text[:cut]
                if delta:
                    request.on_event("token", delta)
                return self._finish(i, "stop")
        if delta:
            request.on_event("token", delta)
        if len(request.tokens) >= request.params.max_tokens or self._pos[i] >= self.max_len:
            self._finish(i, "length")

    def _finish(self, i: int, reason: str) -> None:
        request = self._slots[i]
        self._slots[i] = None
        self._pos[i] = 0
        self._last[i] = 0
        request.finish_reason = reason
        self.stats["finished"] += 1
        request.on_event("done", reason)


class _Idle:
    params = SamplingParams(temperature=0.0)
    tokens: list = []


_IDLE = _Idle()
