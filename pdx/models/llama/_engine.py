"""LLMEngine: continuous batching over a paged KV cache, with prefix caching, chunked prefill and preemption.

The KV cache is one pool of `num_blocks` blocks of `block_size` tokens per
layer (`LlamaForCausalLM.init_pages`); a sequence holds
`ceil(tokens / block_size)` of them, listed in its block table and allocated
as it grows (`pdx.models.llama._paged`). Full blocks are keyed by their
prefix: a request whose prompt starts like an earlier one reuses those
blocks instead of recomputing them, and released blocks stay cached until
the pool needs room (least recently released first).

Each step runs every sequence that has one token to compute in one compiled
decode call, and up to `max_prefill_tokens` prompt tokens in one compiled
prefill call: prompts that arrive together prefill together, and a longer
prompt is split into chunks over several steps while the running streams
keep producing tokens. Shapes are padded to powers of two, so a handful of
programs compile once. When the pool is full, the most recently admitted
sequence is preempted: its blocks are freed and it goes back to the front of
the queue with its prompt and generated tokens, recomputed when there is
room. Sampling (temperature, top-k, top-p, greedy at temperature 0,
an optional per-request constraint) is per row inside one compiled function;
each request's random stream depends only on its seed and token count, so a
request decodes the same alone, in a crowd, or after a preemption.

With `speculative=SpeculativeConfig(...)`, a decode step first proposes up
to k tokens per sequence (prompt lookup, or a draft model over its own pages
that share the target's block tables and mirror every target call), then the
target scores the last token and the proposals in one call of width k + 1;
`_sampling.verify` keeps what the target agrees with. Only kept tokens are
committed to the block table, so rejected proposals never reach the prefix
cache; their keys/values lie past the sequence's length and are overwritten.

One worker thread owns the cache and runs the loop; `submit` may be called
from any thread and reports tokens through the request's callback.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from pdx.models.llama._paged import BlockPool, BlockTable
from pdx.models.llama._sampling import sample, sample_draft, verify
from pdx.models.llama._speculative import SpeculativeConfig, ngram_propose

__all__ = ["LLMEngine", "SamplingParams", "SpeculativeConfig"]

MAX_LOGPROBS = 20   # top alternatives a request may ask for (OpenAI's limit)


@dataclasses.dataclass(frozen=True)
class SamplingParams:
    """Per-request decoding settings (OpenAI's names): temperature 0 = greedy.

    `logprobs=k` reports the sampled token's log-probability and the `k` most
    likely alternatives (log_softmax of the raw logits) before each token;
    `stop_token_ids` end generation (finish "stop", the token not included);
    `constraint` is an object with `allowed(generated_ids) -> bool mask (V,) |
    None` (only those tokens may be sampled next) and `finished(generated_ids)
    -> bool` (True ends generation with "stop"), one fresh object per request.
    """

    max_tokens: int = 16
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    stop: tuple = ()
    seed: int = 0
    logprobs: int | None = None
    stop_token_ids: tuple = ()
    constraint: object | None = None

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
        if self.logprobs is not None and (not isinstance(self.logprobs, int) or isinstance(self.logprobs, bool)
                                          or not 0 <= self.logprobs <= MAX_LOGPROBS):
            raise ValueError(f"logprobs must be None or an int in [0, {MAX_LOGPROBS}]; got {self.logprobs!r}")
        ids = self.stop_token_ids
        if (not isinstance(ids, (tuple, list)) or len(ids) > 64
                or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids)):
            raise ValueError(f"stop_token_ids must be a tuple of up to 64 token ids (ints >= 0); got {ids!r}")
        c = self.constraint
        if c is not None and not (callable(getattr(c, "allowed", None)) and callable(getattr(c, "finished", None))):
            raise ValueError(f"constraint must be None or an object with allowed(ids) and finished(ids) methods; "
                             f"got {type(c).__name__}")


class Request:
    """One generation: prompt ids, settings, and what was produced (filled by the engine)."""

    def __init__(self, prompt_ids, params: SamplingParams, on_event):
        self.prompt_ids = list(prompt_ids)
        self.params = params
        self.on_event = on_event          # ("logprobs", {...}) / ("token", text_delta) / ("done", reason)
        self.tokens: list[int] = []
        self.text = ""
        self.finish_reason = None
        self.cancelled = False
        self.arrived = time.monotonic()
        self.first_token_s = None
        self.preemptions = 0
        self.cached_tokens = 0            # prompt tokens served from the prefix cache at (last) admission


class _Seq:
    """A request's place in the engine: its tokens so far (prompt + generated) and its block table."""

    def __init__(self, request: Request, pool: BlockPool):
        self.request = request
        self.tokens = list(request.prompt_ids)
        self.table = BlockTable(pool)
        self.drafts: list[int] = []       # this step's proposals (prompt lookup) ...
        self.num_drafts = 0               # ... and how many the target checks

    @property
    def pending(self) -> int:
        return len(self.tokens) - self.table.num_computed


def _forward_fn(graphdef, state, pages, out, tokens, positions, slots, tables, lens, rows):
    """Rows of the last T tokens of sequences over the paged cache; each row's last logits go to out[rows[r]].

    out (max_slots, V) collects one step's logits for one sampling call; rows
    of padding carry an index past its end and are dropped.
    """
    model = nnx.merge(graphdef, state)
    hidden, new = model.model.paged_forward(tokens, positions, pages, slots, tables, lens, gather=True)
    logits = model.head(hidden[:, -1]).astype(jnp.float32)
    return out.at[rows].set(logits, mode="drop"), new


def _score_fn(graphdef, state, pages, tokens, positions, slots, tables, lens, take):
    """Logits (B, k+1, V) at the row positions `take` (B, k+1): the target's view of a row's proposals."""
    model = nnx.merge(graphdef, state)
    hidden, new = model.model.paged_forward(tokens, positions, pages, slots, tables, lens, gather=True)
    picked = jnp.take_along_axis(hidden, take[:, :, None], axis=1)
    return model.head(picked).astype(jnp.float32), new


# A step is two compiled calls: the forward reads the pages and returns the new tokens' keys/values, then
# `_write` puts them in the pages, donated, in place. One program doing both would copy the whole pool.
_forward = jax.jit(_forward_fn, static_argnums=0, donate_argnums=3)
_score = jax.jit(_score_fn, static_argnums=0)
_write = jax.jit(lambda write, pages, new, slots: write(pages, new, slots), static_argnums=0, donate_argnums=1)


def kv_dtype(model):
    """The cache's dtype: the model's activations' (its embedding table's), so bf16 weights keep a bf16 cache."""
    return model.model.embed_tokens.weight.dtype


@functools.partial(jax.jit, static_argnums=0, static_argnames=("k", "block_size"), donate_argnums=2)
def _propose(graphdef, state, pages, tokens, positions, slots, tables, lens, num, seeds, counters, temperature,
             top_k, top_p, *, k, block_size):
    """k autoregressive draft steps on device: row b's proposal j is written at position lens[b] + j - 1.

    Step 0 runs the row's last two tokens (width 2); step j > 0 its proposal
    j - 1, writing keys/values only where j < num[b] (the positions reserved).
    """
    model = nnx.merge(graphdef, state)
    rows = jnp.arange(tokens.shape[0])
    drafts, dists = [], []
    for j in range(k):
        if j:
            pos = lens + j - 1
            live = (j < num) & (lens > 0)
            slot = tables[rows, jnp.minimum(pos // block_size, tables.shape[1] - 1)] * block_size + pos % block_size
            tokens, positions = drafts[-1][:, None], pos[:, None]
            slots = jnp.where(live, slot, -1)[:, None]
            step_lens = jnp.where(lens > 0, pos + 1, 0)
        else:
            step_lens = lens
        hidden, pages = model.model.paged_forward(tokens, positions, pages, slots, tables, step_lens)
        logits = model.head(hidden[:, -1]).astype(jnp.float32)
        token, q = sample_draft(logits, seeds, counters + j, temperature, top_k, top_p)
        drafts.append(token)
        dists.append(q)
    return jnp.stack(drafts, axis=1), jnp.stack(dists, axis=1), pages


class _Paged:
    """A model split for compiled calls, with its page pool and its step's logits buffer."""

    def __init__(self, model, num_blocks: int, block_size: int, rows: int):
        self.graphdef, self.state = nnx.split(model)
        self.write = model.write_pages
        self.pages = model.init_pages(num_blocks, block_size, kv_dtype(model))
        self.logits = jnp.zeros((rows, model.config.vocab_size), jnp.float32)


def _bucket(n: int, low: int = 1) -> int:
    """The power of 2 (at least `low`) that holds n: few shapes (few compiles), at most 2x padding."""
    size = low
    while size < n:
        size *= 2
    return size


# A compiled call's fixed cost, in prompt tokens computed, for choosing how to group a step's prefill rows.
_CALL_COST_TOKENS = 32


def prefill_groups(lengths, max_rows: int, max_width: int) -> list[tuple[int, int]]:
    """Split chunk lengths (sorted, longest first) into at most 3 runs, one compiled call each, computing the
    fewest padded tokens: a call is as wide as its longest chunk (a power of 2, at least 16) and holds a power
    of 2 of rows, so short prompts batched with a long one would mostly compute padding.

    >>> prefill_groups([100, 90, 20, 18], max_rows=16, max_width=512)
    [(0, 2), (2, 4)]
    """
    k = len(lengths)
    widths = [min(_bucket(n, 16), max_width) for n in lengths]  # computed once: the loops below are O(k^2)
    rows = [0] + [min(_bucket(n), max_rows) for n in range(1, k + 1)]

    def cost(i, j):
        return rows[j - i] * widths[i] + _CALL_COST_TOKENS

    best, groups = cost(0, k), [(0, k)]
    for a in range(1, k):
        if cost(0, a) + cost(a, k) < best:
            best, groups = cost(0, a) + cost(a, k), [(0, a), (a, k)]
        for b in range(a + 1, k):
            if cost(0, a) + cost(a, b) + cost(b, k) < best:
                best, groups = cost(0, a) + cost(a, b) + cost(b, k), [(0, a), (a, b), (b, k)]
    return groups


def _byte_decoder() -> dict:
    """The byte-level BPE alphabet (GPT-2's printable stand-ins for bytes) -> byte value."""
    keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    chars, extra = list(keep), 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(keep, chars)}


_BYTES = _byte_decoder()
_GREEDY = SamplingParams(temperature=0.0)


class LLMEngine:
    """Continuous-batching generation for a LlamaForCausalLM and its Tokenizer, over a paged KV cache.

    Args:
      model: a `LlamaForCausalLM` (put in eval mode).
      tokenizer: a `pdx.text.Tokenizer` (its EOS ends a request).
      max_slots: sequences decoded at once.
      max_len: positions per sequence: prompt + generated tokens must fit.
      max_queue: requests waiting for a slot; `submit` raises `QueueFull` beyond.
      block_size: tokens per KV block.
      num_blocks: KV blocks in the pool; None holds `max_slots` full-length sequences.
        Fewer blocks use less memory: sequences are preempted (and later
        recomputed) when the pool runs out.
      enable_prefix_caching: reuse the blocks of a prompt's prefix computed earlier.
      max_prefill_tokens: prompt tokens computed per step (longer prompts are chunked).
      speculative: None, or a `SpeculativeConfig` (prompt lookup or a draft model):
        exact speculative decoding; `spec_stats()` reports its acceptance.

    Example:
      >>> from pdx.models.llama import LlamaForCausalLM, LLMEngine, SamplingParams
      >>> from pdx.text import train_bpe
      >>> tok = train_bpe(["hello world"] * 20, vocab_size=270)
      >>> engine = LLMEngine(LlamaForCausalLM("tiny"), tok, max_slots=2, max_len=32)
      >>> len(engine.generate(tok.encode("hello"), SamplingParams(max_tokens=4, temperature=0))[0]) <= 4
      True
      >>> engine.kv_usage()["blocks_used"]
      0
      >>> engine.close()
    """

    class QueueFull(RuntimeError):
        """All slots are busy and the waiting queue is full."""

    def __init__(self, model, tokenizer, *, max_slots: int = 16, max_len: int = 256, max_queue: int = 256,
                 block_size: int = 16, num_blocks: int | None = None, enable_prefix_caching: bool = True,
                 max_prefill_tokens: int = 512, speculative=None):
        for name, value in (("max_slots", max_slots), ("max_len", max_len), ("max_queue", max_queue),
                            ("block_size", block_size), ("max_prefill_tokens", max_prefill_tokens)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"LLMEngine: {name} must be a positive int; got {value!r}")
        if max_len > model.config.max_position_embeddings:
            raise ValueError(f"LLMEngine: max_len={max_len} exceeds the model's max_position_embeddings="
                             f"{model.config.max_position_embeddings}")
        self._max_blocks = -(-max_len // block_size)
        num_blocks = max_slots * self._max_blocks if num_blocks is None else num_blocks
        if not isinstance(num_blocks, int) or isinstance(num_blocks, bool) or num_blocks < self._max_blocks:
            raise ValueError(f"LLMEngine: num_blocks must be an int >= {self._max_blocks} (one max_len={max_len} "
                             f"sequence in blocks of {block_size}); got {num_blocks!r}")
        if speculative is not None:
            if not isinstance(speculative, SpeculativeConfig):
                raise ValueError(f"LLMEngine: speculative must be None or a SpeculativeConfig(method='ngram' | "
                                 f"'draft', ...); got {type(speculative).__name__}")
            speculative.check(model.config, max_len)
            if speculative.draft_model is not None:
                speculative.draft_model.eval()
        model.eval()
        self.model, self.tokenizer, self.speculative = model, tokenizer, speculative
        self.max_slots, self.max_len, self.max_queue = max_slots, max_len, max_queue
        self.block_size, self.num_blocks, self.max_prefill_tokens = block_size, num_blocks, max_prefill_tokens
        self.enable_prefix_caching = bool(enable_prefix_caching)
        self.eos = tokenizer.eos_token_id
        self.vocab_size = model.config.vocab_size
        self._new_cache()
        c = model.config
        self._block_bytes = (2 * c.num_hidden_layers * block_size * c.num_key_value_heads * c.head_dim
                             * jnp.dtype(kv_dtype(model)).itemsize)
        self._running: list[_Seq] = []           # admission order: the last is preempted first
        self._waiting: collections.deque[_Seq] = collections.deque()
        self._cond = threading.Condition()
        self._stop = False
        self.stats = {"decode_steps": 0, "prefills": 0, "prefill_calls": 0, "prefill_tokens": 0,
                      "generated_tokens": 0, "finished": 0, "prompt_tokens": 0, "prefix_cached_tokens": 0, "preemptions": 0,
                      "spec_rows": 0, "spec_proposed": 0, "spec_accepted": 0}
        self._speculating = False
        self._thread = threading.Thread(target=self._loop, name="pdx-llm-engine", daemon=True)
        self._thread.start()

    def _new_cache(self) -> None:
        self.pool = BlockPool(self.num_blocks, self.block_size, enable_prefix_caching=self.enable_prefix_caching)
        self._target = _Paged(self.model, self.num_blocks, self.block_size, self.max_slots)
        draft = self.speculative.draft_model if self.speculative is not None else None
        self._draft = None if draft is None else _Paged(draft, self.num_blocks, self.block_size, self.max_slots)

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
        bad = [i for i in params.stop_token_ids if i >= self.vocab_size]
        if bad:
            raise ValueError(f"stop_token_ids {bad} are outside the vocabulary (size {self.vocab_size})")
        request = Request(prompt_ids, params, on_event)
        with self._cond:
            if len(self._waiting) >= self.max_queue:
                raise LLMEngine.QueueFull(f"{len(self._waiting)} requests are waiting (max_queue={self.max_queue})")
            self._waiting.append(_Seq(request, self.pool))
            self._cond.notify()
        return request

    def generate(self, prompt_ids, params: SamplingParams):
        """Blocking helper: (tokens, text, finish_reason) of one request."""
        done = threading.Event()
        request = self.submit(prompt_ids, params, lambda kind, payload: done.set() if kind == "done" else None)
        done.wait()
        return request.tokens, request.text, request.finish_reason

    def load(self) -> dict:
        """Active sequences and waiting requests now."""
        with self._cond:
            return {"active": len(self._running), "waiting": len(self._waiting)}

    def kv_usage(self) -> dict:
        """The KV pool now: blocks in use, free blocks still holding a cached prefix, tokens held, bytes in use."""
        with self._cond:
            used = self.pool.num_used()
            return {"block_size": self.block_size, "blocks_total": self.num_blocks, "blocks_used": used,
                    "blocks_cached_free": self.pool.num_cached_free(),
                    "tokens_held": sum(s.table.num_computed for s in self._running),
                    "kv_bytes_used": used * self._block_bytes, "block_bytes": self._block_bytes}

    def spec_stats(self) -> dict:
        """Speculative decoding so far: proposals checked and kept, acceptance rate, tokens per target call."""
        st = self.stats
        rows = max(st["spec_rows"], 1)
        return {"rows": st["spec_rows"], "proposed": st["spec_proposed"], "accepted": st["spec_accepted"],
                "acceptance_rate": st["spec_accepted"] / max(st["spec_proposed"], 1),
                "tokens_per_step": (st["spec_accepted"] + st["spec_rows"]) / rows}

    def close(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify()
        self._thread.join(timeout=30)

    # -- the loop ------------------------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._stop and not self._waiting and not self._running:
                    self._cond.wait()
                if self._stop:
                    return
                decode, prefill = self._schedule()
            try:
                self._run(decode, prefill)
            except Exception as e:  # a failing model call ends its requests, never the server
                with self._cond:
                    for seq in list(self._running):
                        self._finish(seq, f"error: {type(e).__name__}: {e}")
                    self._new_cache()  # the donated pages may be gone; cached prefixes go with them

    def _schedule(self):
        """This step's rows: (seq, tokens to compute) for decode (1 token) and for prefill (chunks)."""
        for seq in [s for s in self._waiting if s.request.cancelled]:
            self._waiting.remove(seq)
            self._finish(seq, "cancelled")
        for seq in [s for s in self._running if s.request.cancelled]:
            self._finish(seq, "cancelled")
        decode, prefill = [], []
        budget, preempted, i = self.max_prefill_tokens, False, 0
        spec = self.speculative
        decoding = sum(s.pending == 1 for s in self._running)
        self._speculating = spec is not None and (spec.disable_by_batch_size is None
                                                  or decoding < spec.disable_by_batch_size)
        while i < len(self._running):
            seq = self._running[i]
            n = 1 if seq.pending == 1 else min(seq.pending, budget)
            if n == 0:
                i += 1
                continue
            if seq.pending == 1 and self._speculating:
                self._plan_drafts(seq)
                if not seq.table.reserve(seq.table.num_computed + 1 + seq.num_drafts):
                    seq.drafts, seq.num_drafts = [], 0
            while not seq.table.reserve(seq.table.num_computed + n):
                victim = self._running[-1]
                self._preempt(victim)
                preempted = True
                if victim is seq:
                    break
            if seq in self._running:
                (decode if seq.pending == 1 else prefill).append((seq, n))
                budget -= n if seq.pending > 1 else 0
            i += 1
        while self._waiting and not preempted and len(self._running) < self.max_slots and budget > 0:
            seq = self._waiting[0]
            seq.table = BlockTable(self.pool)  # waiting sequences hold no blocks
            cached = seq.table.match_prefix(seq.tokens)
            n = 1 if seq.pending == 1 else min(seq.pending, budget)
            if not seq.table.reserve(cached + n):
                seq.table.free()
                break
            self._waiting.popleft()
            self._running.append(seq)
            seq.drafts, seq.num_drafts = [], 0
            seq.request.cached_tokens = cached
            self.stats["prompt_tokens"] += len(seq.tokens)
            self.stats["prefix_cached_tokens"] += cached
            (decode if seq.pending == 1 else prefill).append((seq, n))
            budget -= n if seq.pending > 1 else 0
        return decode, prefill

    def _preempt(self, seq: _Seq) -> None:
        self._running.remove(seq)
        seq.table.free()
        seq.request.preemptions += 1
        self.stats["preemptions"] += 1
        self._waiting.appendleft(seq)

    def _plan_drafts(self, seq: _Seq) -> None:
        """How many tokens to propose for a decoding sequence (and, for prompt lookup, which)."""
        spec, request = self.speculative, seq.request
        room = min(spec.num_speculative_tokens, self.max_len - len(seq.tokens),
                   request.params.max_tokens - len(request.tokens) - 1)
        if room <= 0 or request.params.constraint is not None:
            seq.drafts, seq.num_drafts = [], 0
        elif spec.method == "ngram":
            seq.drafts = ngram_propose(seq.tokens, room, spec.prompt_lookup_max, spec.prompt_lookup_min)
            seq.num_drafts = len(seq.drafts)
        else:
            seq.drafts, seq.num_drafts = [], room

    def _rows(self, entries, width: int, b: int):
        """Padded arrays (b rows) for entries of (seq, start, tokens): tokens at positions start.., placed last."""
        bs = self.block_size
        tokens = np.zeros((b, width), np.int32)
        slots = np.full((b, width), -1, np.int32)
        # the tables are as wide as the longest row needs (a power of two): attention reads only those blocks
        need = max((len(seq.table.block_ids) for seq, _, _ in entries), default=1)
        span = 1
        while span < need:
            span *= 2
        tables = np.zeros((b, min(span, self._max_blocks)), np.int32)
        lens = np.zeros(b, np.int32)
        for r, (seq, start, toks) in enumerate(entries):
            n = len(toks)
            pos = np.arange(start, start + n)
            blocks = np.asarray(seq.table.block_ids, np.int32)
            tokens[r, width - n:] = toks
            slots[r, width - n:] = blocks[pos // bs] * bs + pos % bs
            tables[r, :len(blocks)] = blocks
            lens[r] = start + n
        positions = np.maximum(lens[:, None] - width + np.arange(width), 0).astype(np.int32)
        return tokens, positions, slots, tables, lens

    def _forward_rows(self, paged: _Paged, entries, width: int, dest) -> None:
        """One compiled call over entries; each entry's last logits land in row dest[i] of paged.logits."""
        b = min(_bucket(len(entries)), self.max_slots)
        rows = np.full(b, self.max_slots, np.int32)
        rows[:len(entries)] = dest
        arrays = self._rows(entries, width, b)
        paged.logits, new = _forward(paged.graphdef, paged.state, paged.pages, paged.logits, *arrays, rows)
        paged.pages = _write(paged.write, paged.pages, new, arrays[2])

    def _call(self, rows, width: int, dest):
        """Run rows of (seq, n tokens); row i's logits land in row dest[i] of the step's logits buffer
        (max_slots: dropped).

        A draft model computes the same rows over its own pages, so its cache
        covers every token the target's does.
        """
        entries = [(seq, seq.table.num_computed, seq.tokens[seq.table.num_computed:seq.table.num_computed + n])
                   for seq, n in rows]
        dest = np.asarray(dest, np.int32)
        self._forward_rows(self._target, entries, width, dest)
        if self._draft is not None:
            self._forward_rows(self._draft, entries, width, dest)

    def _prefill(self, prefill, done, first: int) -> None:
        """The step's prompt chunks, grouped by length into the calls that compute the fewest padded tokens
        (`prefill_groups`); the logits of `done` (chunks that end their prompt) land in rows first.., in order."""
        dest = {id(seq): first + i for i, seq in enumerate(done)}
        rows = sorted(prefill, key=lambda row: -row[1])
        for a, b in prefill_groups([n for _, n in rows], self.max_slots, self.max_prefill_tokens):
            group = rows[a:b]
            width = min(_bucket(group[0][1], 16), self.max_prefill_tokens)
            self._call(group, width, [dest.get(id(seq), self.max_slots) for seq, _ in group])
            self.stats["prefill_calls"] += 1

    def _run(self, decode, prefill) -> None:
        speculate = self._speculating and bool(decode)
        if decode and not speculate:
            self._call(decode, 1, np.arange(len(decode)))
        if decode:
            self.stats["decode_steps"] += 1
        done = [seq for seq, n in prefill if seq.pending == n]   # prompts whose last chunk runs now
        if prefill:
            self._prefill(prefill, done, 0 if speculate else len(decode))
            self.stats["prefills"] += 1
            self.stats["prefill_tokens"] += sum(n for _, n in prefill)
        verified = self._speculate([seq for seq, _ in decode]) if speculate else []
        ready = ([] if speculate else [seq for seq, _ in decode]) + done
        picked = self._pick(ready) if ready else []
        with self._cond:
            for seq, n in ([] if speculate else decode) + prefill:
                seq.table.commit(seq.tokens, seq.table.num_computed + n)
            for seq, tokens, _ in verified:   # the last token and the kept proposals are computed
                seq.table.commit(seq.tokens + tokens[:-1], seq.table.num_computed + len(tokens))
            for seq, (token, logprobs) in zip(ready, picked):
                self._accept(seq, token, logprobs)
            for seq, tokens, logprobs in verified:
                for token, info in zip(tokens, logprobs):
                    self._accept(seq, token, info)
                    if seq.request.finish_reason is not None:
                        break

    def _settings(self, seqs, counters):
        """Per-row sampling arrays for seqs padded to max_slots rows: seeds, counters, temperature, top_k, top_p."""
        params = [seq.request.params for seq in seqs] + [_GREEDY] * (self.max_slots - len(seqs))
        counts = list(counters) + [0] * (self.max_slots - len(seqs))
        return (np.asarray([p.seed for p in params], np.uint32), np.asarray(counts, np.uint32),
                np.asarray([p.temperature for p in params], np.float32),
                np.asarray([p.top_k for p in params], np.int32), np.asarray([p.top_p for p in params], np.float32))

    def _constraint_mask(self, seqs, rows: int):
        """(rows, V) bool of what each sequence's constraint allows next, or None when no sequence has one."""
        mask = None
        for r, seq in enumerate(seqs):
            constraint = seq.request.params.constraint
            allowed = None if constraint is None else constraint.allowed(list(seq.request.tokens))
            if allowed is not None:
                mask = np.ones((rows, self.vocab_size), bool) if mask is None else mask
                mask[r] = self._mask(allowed, self.vocab_size)
        return mask

    def _pick(self, seqs):
        """(token, logprobs or None) for the sequences whose logits are rows 0.. of the step's buffer."""
        top_n = MAX_LOGPROBS if any(seq.request.params.logprobs is not None for seq in seqs) else 0
        b = min(_bucket(len(seqs)), self.max_slots)   # rows beyond the step's are not sampled
        out = sample(self._target.logits[:b], *[a[:b] for a in self._settings(seqs, [len(seq.request.tokens)
                                                                                    for seq in seqs])],
                     self._constraint_mask(seqs, b), top_n=top_n)
        token = np.asarray(out[0])
        best = [np.asarray(o) for o in out[1:]] if top_n else None
        return [(int(token[r]), None if best is None or seq.request.params.logprobs is None
                 else (float(best[0][r]), best[1][r], best[2][r])) for r, seq in enumerate(seqs)]

    def _propose(self, seqs, b: int):
        """A draft model's proposals (b, k) and their distributions (b, k, V): one compiled call of k draft steps.

        The first step recomputes the position before the last token too: when
        every proposal was kept the step before, the draft never saw the last one.
        """
        entries = [(seq, len(seq.tokens) - 2, seq.tokens[-2:]) for seq in seqs]
        num = np.zeros(b, np.int32)
        num[:len(seqs)] = [seq.num_drafts for seq in seqs]
        settings = [a[:b] for a in self._settings(seqs, [len(seq.request.tokens) for seq in seqs])]
        drafts, q, self._draft.pages = _propose(self._draft.graphdef, self._draft.state, self._draft.pages,
                                                *self._rows(entries, 2, b), num, *settings,
                                                k=self.speculative.num_speculative_tokens, block_size=self.block_size)
        return np.asarray(drafts), q

    def _speculate(self, seqs):
        """Score each sequence's last token and proposals in one target call; (seq, tokens, logprobs) to emit."""
        k = self.speculative.num_speculative_tokens
        b = min(_bucket(len(seqs)), self.max_slots)
        num = np.zeros(b, np.int32)
        num[:len(seqs)] = [seq.num_drafts for seq in seqs]
        if self._draft is not None:
            drafts, q = self._propose(seqs, b)
        else:
            drafts, q = np.zeros((b, k), np.int32), None
            for r, seq in enumerate(seqs):
                drafts[r, :seq.num_drafts] = seq.drafts
        entries = [(seq, len(seq.tokens) - 1, [seq.tokens[-1]] + list(drafts[r, :seq.num_drafts]))
                   for r, seq in enumerate(seqs)]
        take = np.minimum(k - num[:, None] + np.arange(k + 1)[None, :], k).astype(np.int32)
        arrays = self._rows(entries, k + 1, b)
        logits, new = _score(self._target.graphdef, self._target.state, self._target.pages, *arrays, take)
        self._target.pages = _write(self._target.write, self._target.pages, new, arrays[2])
        counters = [len(seq.request.tokens) for seq in seqs]
        settings = [a[:b] for a in self._settings(seqs, counters)]
        mask = self._constraint_mask(seqs, b)
        top_n = MAX_LOGPROBS if any(seq.request.params.logprobs is not None for seq in seqs) else 0
        kept, tokens, *best = verify(logits, drafts, num, q, *settings, mask, top_n=top_n)
        kept, tokens = np.asarray(kept), np.asarray(tokens)
        best = [np.asarray(x) for x in best] if top_n else None
        out = []
        for r, seq in enumerate(seqs):
            n = int(kept[r]) + 1
            wants = best is not None and seq.request.params.logprobs is not None
            infos = [(float(best[0][r, j]), best[1][r, j], best[2][r, j]) if wants else None for j in range(n)]
            out.append((seq, [int(t) for t in tokens[r, :n]], infos))
            self.stats["spec_rows"] += 1
            self.stats["spec_proposed"] += seq.num_drafts
            self.stats["spec_accepted"] += n - 1
            seq.drafts, seq.num_drafts = [], 0
        return out

    @staticmethod
    def _mask(allowed, vocab: int):
        allowed = np.asarray(allowed)
        if allowed.dtype != bool or allowed.shape[-1] > vocab or allowed.ndim != 1:
            raise ValueError(f"constraint.allowed must return None or a bool array of shape ({vocab},); got "
                             f"{allowed.dtype} {allowed.shape}")
        return np.pad(allowed, (0, vocab - allowed.shape[0]))

    def _token_info(self, token: int, logprob: float) -> dict:
        piece = self.tokenizer.id_to_token(token) or ""
        data = [_BYTES[ch] for ch in piece] if piece and all(ch in _BYTES for ch in piece) else \
            list(self.tokenizer.decode([token]).encode("utf-8"))
        return {"token_id": token, "token": self.tokenizer.decode([token]), "bytes": data, "logprob": logprob}

    def _accept(self, seq: _Seq, token: int, logprobs) -> None:
        request = seq.request
        if request.cancelled:
            return self._finish(seq, "cancelled")
        if request.first_token_s is None:
            request.first_token_s = time.monotonic() - request.arrived
        self.stats["generated_tokens"] += 1
        if token == self.eos or token in request.params.stop_token_ids:
            return self._finish(seq, "stop")
        request.tokens.append(token)
        seq.tokens.append(token)
        if logprobs is not None:
            chosen, best, best_ids = logprobs
            info = self._token_info(token, chosen)
            info["top"] = [self._token_info(int(i), float(lp))
                           for i, lp in zip(best_ids[:request.params.logprobs], best[:request.params.logprobs])]
            request.on_event("logprobs", info)
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
                if delta or logprobs is not None:
                    request.on_event("token", delta)
                return self._finish(seq, "stop")
        if delta or logprobs is not None:
            request.on_event("token", delta)
        if request.params.constraint is not None and request.params.constraint.finished(request.tokens):
            return self._finish(seq, "stop")
        if len(request.tokens) >= request.params.max_tokens or len(seq.tokens) >= self.max_len:
            self._finish(seq, "length")

    def _finish(self, seq: _Seq, reason: str) -> None:
        if seq in self._running:
            self._running.remove(seq)
        seq.table.free()
        request = seq.request
        request.finish_reason = reason
        self.stats["finished"] += 1
        request.on_event("done", reason)
