"""Speculative decoding in LLMEngine: exact greedy, the target's distribution when sampling, clean caches.

References are independent of the engine: greedy tokens from a loop over the
model's full forward (no cache), and for sampling the target distribution
itself, compared against the empirical distribution of `verify`'s output
over many seeds.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_llm_engine_paged import MAX_LEN, corpus_prompts, forward, greedy_reference, model, run_all, tok  # noqa: F401

from pdx.models.llama import LlamaConfig, LlamaForCausalLM, LLMEngine, SamplingParams, SpeculativeConfig
from pdx.models.llama._paged import block_key
from pdx.models.llama._sampling import target_probs, verify


@pytest.fixture(scope="module")
def draft(model):
    """A one-layer draft: the target's embeddings, first layer and head (layer skipping), so it often agrees."""
    config = LlamaConfig.from_preset("tiny", vocab_size=320, max_position_embeddings=MAX_LEN, num_hidden_layers=1)
    small = LlamaForCausalLM(config, rngs=1)
    state = model.state_dict()
    small.set_state_dict({name: state[name] for name in small.state_dict()})
    return small


def copying_prompts(tok, n):
    """Prompts whose text repeats (so prompt lookup finds what comes next) mixed with plain ones."""
    plain = corpus_prompts(tok, n)
    return [(p[:20] * 3)[:70] if i % 2 else p for i, p in enumerate(plain)]


def valid_keys(sequences, block_size):
    """Every prefix-cache key the token sequences' full blocks may have."""
    keys = set()
    for ids in sequences:
        parent = None
        for i in range(len(ids) // block_size):
            parent = block_key(parent, ids[i * block_size:(i + 1) * block_size])
            keys.add(parent)
    return keys


@pytest.mark.parametrize("method", ["ngram", "draft"])
def test_greedy_with_speculation_equals_plain_greedy_in_a_preempted_crowd(method, model, draft, tok, forward):
    spec = SpeculativeConfig(method, num_speculative_tokens=4 if method == "ngram" else 3,
                             draft_model=draft if method == "draft" else None)
    eng = LLMEngine(model, tok, max_slots=8, max_len=MAX_LEN, block_size=8, num_blocks=22, max_prefill_tokens=32,
                    speculative=spec)
    try:
        prompts = copying_prompts(tok, 200 if method == "ngram" else 40)
        params = [SamplingParams(max_tokens=2 + i % 9, temperature=0, logprobs=2 if i % 7 == 0 else None)
                  for i in range(len(prompts))]
        requests, events = run_all(eng, prompts, params)
        assert eng.stats["preemptions"] > 0 and eng.stats["prefix_cached_tokens"] > 0, eng.stats
        expect = {}
        for i, (p, sp, r) in enumerate(zip(prompts, params, requests)):
            key = (tuple(p), sp.max_tokens)
            if key not in expect:
                expect[key] = greedy_reference(forward, p, sp.max_tokens, tok.eos_token_id)
            assert r.tokens == expect[key], (i, len(p), r.finish_reason)
            if sp.logprobs:   # one logprobs event per token, the chosen token's log-probability from the forward
                infos = [payload for kind, payload in events[i] if kind == "logprobs"]
                assert [info["token_id"] for info in infos] == r.tokens
                ids = list(p)
                for info in infos:
                    want = float(jax.nn.log_softmax(forward(ids))[info["token_id"]])
                    assert abs(info["logprob"] - want) < 1e-4 and len(info["top"]) == 2
                    ids.append(info["token_id"])
        stats = eng.spec_stats()
        assert stats["proposed"] > 0 and 0 < stats["acceptance_rate"] <= 1, stats
        if method == "ngram":     # the repeated prompts are copied: proposals are mostly right
            assert stats["accepted"] > 50 and stats["tokens_per_step"] > 1.2, stats
        # only what the target computed and kept is keyed in the prefix cache
        assert set(eng.pool.cached) <= valid_keys([p + r.tokens for p, r in zip(prompts, requests)], 8)
        usage = eng.kv_usage()
        assert usage["blocks_used"] == 0 and usage["tokens_held"] == 0
    finally:
        eng.close()


def test_a_draft_equal_to_the_target_is_always_accepted(model, tok):
    eng = LLMEngine(model, tok, max_slots=4, max_len=MAX_LEN, block_size=8,
                    speculative=SpeculativeConfig("draft", num_speculative_tokens=3, draft_model=model))
    plain = LLMEngine(model, tok, max_slots=4, max_len=MAX_LEN, block_size=8)
    try:
        prompts = corpus_prompts(tok, 6)
        params = [SamplingParams(max_tokens=13, temperature=0)] * 3 + \
            [SamplingParams(max_tokens=13, temperature=0.8, seed=s) for s in range(3)]
        requests, _ = run_all(eng, prompts, params)
        stats = eng.spec_stats()
        # the draft's own cache mirrors the target's (prefill, proposals, the token it never saw): every draft agrees
        assert stats["acceptance_rate"] == 1.0 and stats["tokens_per_step"] > 3, stats
        for p, sp, r in zip(prompts[:3], params[:3], requests[:3]):
            assert r.tokens == plain.generate(p, sp)[0]
        # seeded sampling under speculation is reproducible, alone or in a crowd
        again, _ = run_all(eng, prompts[::-1], params[::-1])
        assert [r.tokens for r in requests] == [r.tokens for r in again[::-1]]
        assert eng.generate(prompts[4], params[4])[0] == requests[4].tokens
    finally:
        eng.close()
        plain.close()


def test_verify_keeps_the_target_distribution():
    """First emitted token over 40k seeds ~ the target's distribution, for point-mass and sampled drafts."""
    rng = np.random.default_rng(0)
    v, k, n = 6, 2, 40_000
    logits = jnp.asarray(np.repeat(rng.normal(size=(1, k + 1, v)) * 1.5, n, axis=0), jnp.float32)
    seeds = jnp.arange(n, dtype=jnp.uint32)
    counters = jnp.zeros(n, jnp.uint32)
    for temperature, top_k, top_p in ((1.0, 0, 1.0), (0.7, 4, 0.9)):
        t = jnp.full(n, temperature, jnp.float32)
        tk, tp = jnp.full(n, top_k, jnp.int32), jnp.full(n, top_p, jnp.float32)
        p0 = np.asarray(target_probs(logits[:1, 0], t[:1], tk[:1], tp[:1]))[0]
        # a point-mass proposal (prompt lookup) that is often wrong
        drafts = jnp.asarray(np.stack([np.full(n, int(np.argsort(p0)[-2])), np.zeros(n)], 1), jnp.int32)
        # and a draft model whose own distribution q differs from p
        q = jnp.asarray(np.broadcast_to(np.array([[0.5, 0.1, 0.1, 0.1, 0.1, 0.1]]), (n, k, v)), jnp.float32)
        sampled = jax.vmap(lambda key: jax.random.categorical(key, jnp.log(q[0, 0])))(
            jax.random.split(jax.random.key(7), n)).astype(jnp.int32)
        cases = ((drafts, None), (jnp.stack([sampled, sampled], 1), q))
        for d, dist in cases:
            kept, tokens, *_ = verify(logits, d, jnp.full(n, k, jnp.int32), dist, seeds, counters, t, tk, tp)
            first = np.bincount(np.asarray(tokens[:, 0]), minlength=v) / n
            np.testing.assert_allclose(first, p0, atol=0.012)
            assert 0 < float(np.mean(np.asarray(kept))) < k
    # greedy rows: drafts are kept exactly while they equal the argmax, then the argmax follows
    greedy_logits = jnp.asarray([[[0, 3, 1, 0, 0, 0], [0, 0, 0, 4, 0, 0], [5, 0, 0, 0, 0, 0]]] * 2, jnp.float32)
    kept, tokens, *_ = verify(greedy_logits, jnp.asarray([[1, 3], [1, 2]], jnp.int32), jnp.asarray([2, 2], jnp.int32),
                              None, jnp.zeros(2, jnp.uint32), jnp.zeros(2, jnp.uint32), jnp.zeros(2),
                              jnp.zeros(2, jnp.int32), jnp.ones(2))
    assert list(np.asarray(kept)) == [2, 1]
    assert np.asarray(tokens).tolist() == [[1, 3, 0], [1, 3, 3]]


def test_constraints_skip_speculation_and_configs_are_checked(model, draft, tok):
    from test_llm_engine_paged import OnlyThese

    eng = LLMEngine(model, tok, max_slots=4, max_len=MAX_LEN, block_size=8, speculative=SpeculativeConfig("ngram"))
    try:
        allowed = (17, 42)
        tokens, _, reason = eng.generate([17, 42] * 10, SamplingParams(max_tokens=20, temperature=0,
                                                                       constraint=OnlyThese(allowed, 320, 6)))
        assert reason == "stop" and len(tokens) == 6 and set(tokens) <= set(allowed)
    finally:
        eng.close()
    # a crowded step decodes plainly: with 4 streams and disable_by_batch_size=3, only the lone tail speculates
    eng = LLMEngine(model, tok, max_slots=4, max_len=MAX_LEN, block_size=8,
                    speculative=SpeculativeConfig("ngram", disable_by_batch_size=3))
    plain = LLMEngine(model, tok, max_slots=4, max_len=MAX_LEN, block_size=8)
    try:
        prompts = copying_prompts(tok, 4)
        params = [SamplingParams(max_tokens=4 + 10 * (i == 3), temperature=0) for i in range(4)]
        requests, _ = run_all(eng, prompts, params)
        assert [r.tokens for r in requests] == [plain.generate(p, sp)[0] for p, sp in zip(prompts, params)]
        rows = eng.stats["spec_rows"]
        assert 0 < rows < eng.stats["decode_steps"] * 2, eng.stats
    finally:
        eng.close()
        plain.close()
    wide = LlamaForCausalLM(LlamaConfig.from_preset("tiny", vocab_size=256, max_position_embeddings=MAX_LEN), rngs=0)
    for spec, match in ((SpeculativeConfig("medusa"), "method must be one of"),
                        (SpeculativeConfig("ngram", num_speculative_tokens=0), "num_speculative_tokens"),
                        (SpeculativeConfig("ngram", prompt_lookup_min=4, prompt_lookup_max=2), "prompt_lookup_min"),
                        (SpeculativeConfig("ngram", draft_model=draft), "only used with method='draft'"),
                        (SpeculativeConfig("draft"), "needs draft_model=a LlamaForCausalLM"),
                        (SpeculativeConfig("ngram", disable_by_batch_size=0), "disable_by_batch_size"),
                        (SpeculativeConfig("draft", draft_model=wide), "vocab_size 256 differs"),
                        ({"method": "ngram"}, "speculative must be None or a SpeculativeConfig")):
        with pytest.raises(ValueError, match=match):
            LLMEngine(model, tok, max_len=MAX_LEN, speculative=spec)
