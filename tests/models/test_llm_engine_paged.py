"""LLMEngine over a paged KV cache: outputs independent of batching, paging, prefix hits and preemption.

The reference is an independent greedy loop over the model's full forward
(no KV cache at all): every request served by a crowded engine whose pool is
too small for the crowd (so sequences are preempted and recomputed), whose
prompts share prefixes (so blocks are reused) and exceed the prefill budget
(so they are chunked) must produce exactly those tokens.
"""

import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pdx import text
from pdx.models.llama import LlamaConfig, LlamaForCausalLM, LLMEngine, SamplingParams
from pdx.models.llama._engine import prefill_groups
from pdx.models.llama._paged import BlockPool, BlockTable, block_key

MAX_LEN, WIDTH = 128, 128


@pytest.fixture(scope="module")
def tok():
    return text.train_bpe(text.bundled_corpus()[:40], vocab_size=320)


@pytest.fixture(scope="module")
def model():
    return LlamaForCausalLM(LlamaConfig.from_preset("tiny", vocab_size=320, max_position_embeddings=MAX_LEN), rngs=0)


@pytest.fixture(scope="module")
def forward(model):
    """Logits (V,) after ids, from one full forward over the ids padded to WIDTH (causal: padding is unseen)."""
    model.eval()
    run = jax.jit(lambda ids: model(ids)[0])

    def last_logits(ids):
        padded = np.zeros((1, WIDTH), np.int32)
        padded[0, :len(ids)] = ids
        return np.asarray(run(jnp.asarray(padded))[len(ids) - 1], np.float32)
    return last_logits


def greedy_reference(forward, ids, max_tokens, eos):
    ids, out = list(ids), []
    for _ in range(max_tokens):
        t = int(np.argmax(forward(ids)))
        if t == eos:
            break
        out.append(t)
        ids.append(t)
    return out


@pytest.fixture(scope="module")
def engine(model, tok):
    # 22 blocks of 8 tokens: far fewer than 8 slots x 128 positions, so a crowd is preempted
    eng = LLMEngine(model, tok, max_slots=8, max_len=MAX_LEN, block_size=8, num_blocks=22, max_prefill_tokens=32)
    yield eng
    eng.close()


def run_all(engine, prompts, params, check=None):
    """Submit every request at once; wait for all; the Request objects and their events."""
    done, events = threading.Semaphore(0), [[] for _ in prompts]

    def on_event(i):
        def post(kind, payload):
            events[i].append((kind, payload))
            if check is not None:
                check(kind)
            if kind == "done":
                done.release()
        return post
    requests = [engine.submit(p, sp, on_event(i)) for i, (p, sp) in enumerate(zip(prompts, params))]
    for _ in requests:
        assert done.acquire(timeout=120)
    return requests, events


def corpus_prompts(tok, n):
    docs = text.bundled_corpus()
    shared = " ".join(docs[0].split()[:30])     # a long common prefix: several full blocks
    out = []
    for i in range(n):
        words = " ".join(docs[(i * 7) % 40].split()[: 2 + (i * 5) % 30])
        ids = tok.encode(shared + " " + words if i % 3 == 0 else words)[:90]
        out.append(ids)
    return out


# -- the block pool -------------------------------------------------------------------------------------
def test_block_pool_shares_prefixes_counts_references_and_evicts_least_recently_released():
    pool = BlockPool(4, 2)
    a = BlockTable(pool)
    assert a.match_prefix([1, 2, 3, 4, 5]) == 0 and a.reserve(5) and a.block_ids == [0, 1, 2]
    a.commit([1, 2, 3, 4, 5], 5)                         # blocks 0, 1 are full and keyed; 2 is not
    assert set(pool.cached.values()) == {0, 1}
    b = BlockTable(pool)
    assert b.match_prefix([1, 2, 3, 4]) == 2           # one token is always left to compute
    assert b.block_ids == [0] and pool.ref[0] == 2
    assert not b.reserve(2 + 2 * 2)                     # 2 more blocks needed, 1 free: nothing taken
    assert pool.num_free() == 1 and b.block_ids == [0]
    a.free()
    b.free()
    assert pool.num_used() == 0 and pool.num_cached_free() == 2
    # the tail (block 1) was released first, so it is evicted first; block 0 keeps the prefix
    c = BlockTable(pool)
    assert c.reserve(2 * 3)
    assert pool.stats["evictions"] == 1 and pool.key[1] is None
    assert block_key(None, [1, 2]) in pool.cached
    d = BlockTable(pool)
    assert d.match_prefix([1, 2, 9]) == 2
    d.free()
    c.free()
    with pytest.raises(RuntimeError, match="block 3 is not held"):
        pool.release(3)


def test_prefill_groups_split_by_length_only_where_padding_costs_more_than_a_call():
    assert prefill_groups([100, 90, 20, 18], max_rows=16, max_width=512) == [(0, 2), (2, 4)]
    assert prefill_groups([64, 60, 50, 40], max_rows=16, max_width=512) == [(0, 4)]  # one width fits all
    assert prefill_groups([300, 120, 110, 100, 30, 20, 17], max_rows=16, max_width=512) == [(0, 1), (1, 5), (5, 7)]
    assert prefill_groups([16], max_rows=16, max_width=512) == [(0, 1)]


def test_block_pool_rejects_bad_sizes():
    with pytest.raises(ValueError, match="num_blocks must be a positive int; got 0"):
        BlockPool(0, 16)
    with pytest.raises(ValueError, match="block_size"):
        BlockPool(4, True)


# -- the engine -----------------------------------------------------------------------------------------
def test_crowd_equals_full_forward_greedy_and_requests_alone(engine, tok, forward):
    prompts = corpus_prompts(tok, 48)
    prompts.append(tok.encode(" ".join(text.bundled_corpus()[5].split()[:60]))[:100])   # > 3 prefill chunks
    params = [SamplingParams(max_tokens=3 + i % 14, temperature=0) for i in range(len(prompts))]
    violations = []

    def blocks_bounded(kind):
        usage = engine.kv_usage()   # each sequence holds at most ceil(tokens / block_size) blocks
        if usage["blocks_used"] > -(-usage["tokens_held"] // 8) + engine.load()["active"]:
            violations.append(usage)
    before = dict(engine.stats)
    requests, _ = run_all(engine, prompts, params, blocks_bounded)
    stats = {k: engine.stats[k] - before[k] for k in before}
    assert stats["preemptions"] > 0 and stats["prefix_cached_tokens"] > 0, stats
    assert len(prompts[-1]) > engine.max_prefill_tokens
    assert not violations
    for p, sp, r in zip(prompts, params, requests):
        assert r.tokens == greedy_reference(forward, p, sp.max_tokens, tok.eos_token_id), (len(p), r.finish_reason)
    for i in (0, 3, len(prompts) - 1):    # alone (nothing else running) gives the same tokens again
        assert engine.generate(prompts[i], params[i])[0] == requests[i].tokens
    usage = engine.kv_usage()
    assert usage["blocks_used"] == 0 and usage["tokens_held"] == 0 and usage["kv_bytes_used"] == 0
    assert usage["blocks_cached_free"] > 0 and usage["blocks_total"] == 22


def test_prompts_of_mixed_lengths_prefill_in_calls_by_length_and_equal_the_reference(model, tok, forward):
    docs = text.bundled_corpus()
    prompts = [tok.encode(" ".join(docs[i].split()[:words]))[:100] for i, words in
               enumerate([60, 4, 50, 3, 5, 45, 2, 40])]
    params = [SamplingParams(max_tokens=4, temperature=0) for _ in prompts]
    eng = LLMEngine(model, tok, max_slots=8, max_len=MAX_LEN, block_size=8, num_blocks=160, max_prefill_tokens=512)
    try:
        requests, _ = run_all(eng, prompts, params)
        assert eng.stats["prefill_calls"] > eng.stats["prefills"], eng.stats  # the short prompts ran apart
    finally:
        eng.close()
    for p, sp, r in zip(prompts, params, requests):
        assert r.tokens == greedy_reference(forward, p, sp.max_tokens, tok.eos_token_id), len(p)


def test_seeded_sampling_is_the_same_in_a_crowd_and_alone(engine, tok):
    prompts = corpus_prompts(tok, 12)
    params = [SamplingParams(max_tokens=8, temperature=0.9, top_k=40, seed=i) for i in range(12)]
    crowd, _ = run_all(engine, prompts, params)
    again, _ = run_all(engine, prompts[::-1], params[::-1])
    assert [r.tokens for r in crowd] == [r.tokens for r in again[::-1]]
    assert engine.generate(prompts[4], params[4])[0] == crowd[4].tokens
    assert len({tuple(r.tokens) for r in crowd}) > 6


def test_logprobs_are_log_softmax_of_the_forward_and_come_before_each_token(engine, tok, forward):
    prompt = corpus_prompts(tok, 2)[1]
    (request,), (events,) = run_all(engine, [prompt], [SamplingParams(max_tokens=6, temperature=0, logprobs=3)])
    kinds = [k for k, _ in events]
    assert kinds == ["logprobs", "token"] * len(request.tokens) + ["done"]
    ids = list(prompt)
    for (_, info), token in zip(events[0::2], request.tokens):
        expect = np.asarray(jax.nn.log_softmax(forward(ids)))
        assert info["token_id"] == token and abs(info["logprob"] - expect[token]) < 1e-4
        assert [t["token_id"] for t in info["top"]] == list(np.argsort(-expect)[:3])
        np.testing.assert_allclose([t["logprob"] for t in info["top"]], np.sort(expect)[::-1][:3], atol=1e-4)
        assert bytes(info["bytes"]).decode("utf-8", "replace") == tok.decode([token])
        ids.append(token)


def test_stop_token_ids_end_generation_without_the_token(engine, tok):
    prompt = corpus_prompts(tok, 3)[2]
    free = engine.generate(prompt, SamplingParams(max_tokens=12, temperature=0))[0]
    stop = free[3]
    cut = free.index(stop)
    tokens, _, reason = engine.generate(prompt, SamplingParams(max_tokens=12, temperature=0, stop_token_ids=(stop,)))
    assert tokens == free[:cut] and reason == "stop"


class OnlyThese:
    def __init__(self, ids, vocab, length):
        self.mask = np.zeros(vocab, bool)
        self.mask[list(ids)] = True
        self.length, self.calls = length, 0

    def allowed(self, generated):
        self.calls += 1
        return self.mask

    def finished(self, generated):
        return len(generated) >= self.length


def test_a_constraint_allows_only_its_tokens_and_finishes(engine, tok):
    allowed = (17, 42, 99)
    params = [SamplingParams(max_tokens=20, temperature=1.0, seed=s, constraint=OnlyThese(allowed, 320, 5))
              for s in range(4)]
    requests, _ = run_all(engine, corpus_prompts(tok, 4), params)
    for r in requests:
        assert r.finish_reason == "stop" and len(r.tokens) == 5 and set(r.tokens) <= set(allowed), r.tokens
    assert len({t for r in requests for t in r.tokens}) > 1


def test_cancelled_requests_free_their_blocks_also_while_waiting(model, tok):
    eng = LLMEngine(model, tok, max_slots=1, max_len=MAX_LEN, block_size=8, num_blocks=16)
    try:
        done = {0: threading.Event(), 1: threading.Event()}
        first = None

        def on_first(kind, payload):
            if kind == "token" and len(first.tokens) == 3:
                first.cancelled = True
            if kind == "done":
                done[0].set()
        first = eng.submit(tok.encode("the first request runs"), SamplingParams(max_tokens=60, temperature=0), on_first)
        second = eng.submit(tok.encode("the second one waits"), SamplingParams(max_tokens=60, temperature=0),
                            lambda kind, payload: done[1].set() if kind == "done" else None)
        second.cancelled = True
        assert done[0].wait(60) and done[1].wait(60)
        assert first.finish_reason == "cancelled" and 3 <= len(first.tokens) <= 4
        assert second.finish_reason == "cancelled" and second.tokens == [] and second.first_token_s is None
        assert eng.kv_usage()["blocks_used"] == 0 and eng.load() == {"active": 0, "waiting": 0}
    finally:
        eng.close()


def test_scan_layers_pages_stack_and_match_the_layer_list(model, tok, forward):
    stacked = LlamaForCausalLM(LlamaConfig.from_preset("tiny", vocab_size=320, max_position_embeddings=MAX_LEN,
                                                       scan_layers=True), rngs=0)
    stacked.set_state_dict(model.state_dict())
    pages = stacked.init_pages(10, 8)
    assert len(pages) == 2 and pages[0].shape[:3] == (2, 10, 8)
    eng = LLMEngine(stacked, tok, max_slots=2, max_len=MAX_LEN, block_size=8, num_blocks=16)
    try:
        prompt = corpus_prompts(tok, 2)[1]
        assert eng.generate(prompt, SamplingParams(max_tokens=6, temperature=0))[0] == \
            greedy_reference(forward, prompt, 6, tok.eos_token_id)
    finally:
        eng.close()


def test_sampling_params_and_engine_arguments_are_checked(engine, model, tok):
    for bad, match in ((dict(logprobs=21), "logprobs must be None or an int in"),
                       (dict(logprobs=True), "logprobs"),
                       (dict(stop_token_ids=(-1,)), "stop_token_ids must be"),
                       (dict(stop_token_ids="ab"), "stop_token_ids must be"),
                       (dict(constraint=object()), "constraint must be None or an object with allowed")):
        with pytest.raises(ValueError, match=match):
            SamplingParams(**bad).check()
    with pytest.raises(ValueError, match="outside the vocabulary"):
        engine.submit([1, 2], SamplingParams(stop_token_ids=(320,)), lambda *a: None)
    with pytest.raises(ValueError, match="num_blocks must be an int >= 16"):
        LLMEngine(model, tok, max_len=128, block_size=8, num_blocks=3)


ONE_DEVICE_CROWD = r"""
import json, sys, threading
import jax, jax.numpy as jnp, numpy as np
sys.path.insert(0, {tests!r})
from pdx import text
from pdx.kernels.onednn import _paged_attention as cpu
from pdx.models.llama import LlamaConfig, LlamaForCausalLM, LLMEngine, SamplingParams
import test_llm_engine_paged as t

traced = []
kernel = cpu.paged_attention
cpu.paged_attention = lambda *a, **k: traced.append(a[0].shape) or kernel(*a, **k)
tok = text.train_bpe(text.bundled_corpus()[:40], vocab_size=320)
model = LlamaForCausalLM(LlamaConfig.from_preset("tiny", vocab_size=320, max_position_embeddings=t.MAX_LEN), rngs=0)
model.eval()
run = jax.jit(lambda ids: model(ids)[0])
def forward(ids):
    padded = np.zeros((1, t.WIDTH), np.int32); padded[0, :len(ids)] = ids
    return np.asarray(run(jnp.asarray(padded))[len(ids) - 1], np.float32)
eng = LLMEngine(model, tok, max_slots=8, max_len=t.MAX_LEN, block_size=16, num_blocks=40, max_prefill_tokens=32)
prompts = t.corpus_prompts(tok, 20)
params = [SamplingParams(max_tokens=3 + i % 9, temperature=0) for i in range(len(prompts))]
requests, _ = t.run_all(eng, prompts, params)
same = [r.tokens == t.greedy_reference(forward, p, sp.max_tokens, tok.eos_token_id)
        for p, sp, r in zip(prompts, params, requests)]
eng.close()
print(json.dumps({{"devices": jax.device_count(), "same": same, "traced": [list(s) for s in traced],
                  "preempted": eng.stats["preemptions"], "cached": eng.stats["prefix_cached_tokens"]}}))
"""


def test_one_device_engine_decodes_on_the_cpu_paged_kernel_and_equals_full_forward_greedy(tmp_path):
    """In a one-device process "auto" runs decode steps on the CPU paged-attention kernel (longer
    prefill chunks on XLA); a crowd with preemption and prefix hits still equals the full forward."""
    import json
    import os
    import pathlib
    import subprocess
    import sys

    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=1", JAX_PLATFORMS="cpu")
    script = ONE_DEVICE_CROWD.format(tests=str(pathlib.Path(__file__).parent))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["devices"] == 1
    assert all(got["same"]), got["same"]
    widths = {shape[1] for shape in got["traced"]}
    assert 1 in widths and max(widths) <= 8, got["traced"]   # decode on the kernel, prefill chunks not
    assert got["cached"] > 0, got
