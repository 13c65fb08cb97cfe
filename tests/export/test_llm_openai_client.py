"""`pdx serve --llm` against the official `openai` Python client: a real server process on loopback.

Completions and chat, streaming and not, n, stop, max_tokens, seeded sampling,
logprobs checked against a log_softmax of the model's own logits computed
in-process, usage, json_object output, errors as the client's exception
classes, and a client that leaves mid-stream hands its KV blocks back.
"""

import concurrent.futures
import subprocess
import sys
import json
import re
import time

import httpx
import jax
import jax.numpy as jnp
import numpy as np
import openai
import pytest

from pdx.export._json_constraint import JSONObjectConstraint, JSONVocab
from pdx.export._llm_server import load_llm

from test_llm_server import model_dir, start, stop  # noqa: F401 - the tiny model directory fixture


@pytest.fixture(scope="module")
def server(model_dir):  # noqa: F811
    proc, url = start(model_dir, "--max-slots", "2", "--max-len", "128", "--max-queue", "2")
    yield url, openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, timeout=60)
    stop(proc)


def kv_used(url) -> int:
    return int(re.search(r"^pdx_llm_kv_blocks_used (\d+)$", httpx.get(url + "/metrics").text, re.M).group(1))


def test_models_completions_and_chat(server, model_dir):  # noqa: F811
    url, client = server
    assert [m.id for m in client.models.list().data] == ["hf"]
    full = client.completions.create(model="hf", prompt="the cat", max_tokens=6, temperature=0)
    assert full.choices[0].finish_reason in ("stop", "length") and full.usage.completion_tokens <= 6
    assert full.usage.total_tokens == full.usage.prompt_tokens + full.usage.completion_tokens
    chunks = list(client.completions.create(model="hf", prompt="the cat", max_tokens=6, temperature=0, stream=True,
                                            stream_options={"include_usage": True}))
    assert "".join(c.choices[0].text for c in chunks if c.choices) == full.choices[0].text
    assert chunks[-1].usage.completion_tokens == full.usage.completion_tokens
    short = client.completions.create(model="hf", prompt="the cat", max_tokens=2, temperature=0)
    assert short.choices[0].finish_reason == "length" and short.usage.completion_tokens == 2
    if len(full.choices[0].text) > 3:
        word = full.choices[0].text[1:3]
        cut = client.completions.create(model="hf", prompt="the cat", max_tokens=6, temperature=0, stop=[word])
        assert cut.choices[0].finish_reason == "stop" and full.choices[0].text.startswith(cut.choices[0].text)
        assert word not in cut.choices[0].text

    # stop_token_ids (vLLM's extra field): the greedy first token ends the answer at once
    first = client.completions.create(model="hf", prompt=[5, 6, 7], max_tokens=1, temperature=0, logprobs=0)
    token = first.choices[0].logprobs.tokens[0]
    stopped = client.completions.create(model="hf", prompt=[5, 6, 7], max_tokens=4, temperature=0,
                                        extra_body={"stop_token_ids": [int(np.argmax(reference_logprobs(model_dir, [5, 6, 7])))]})
    assert stopped.choices[0].finish_reason == "stop" and stopped.choices[0].text == "" and token

    chat = dict(model="hf", messages=[{"role": "user", "content": "hi"}], max_tokens=8, temperature=0.9, top_p=0.9,
                seed=11, n=2)
    a, b = client.chat.completions.create(**chat), client.chat.completions.create(**chat)
    assert [c.message.content for c in a.choices] == [c.message.content for c in b.choices]
    assert len(a.choices) == 2 and a.choices[0].message.role == "assistant"
    streamed = ["", ""]
    for c in client.chat.completions.create(**chat, stream=True):
        for choice in c.choices:
            streamed[choice.index] += choice.delta.content or ""
    assert streamed == [c.message.content for c in a.choices]


_REFERENCE = {}


def reference_logprobs(directory, prompt):
    """log_softmax of the next-token logits, from the saved model loaded in this process."""
    if "model" not in _REFERENCE:
        _REFERENCE["model"] = load_llm(directory)[0]
    logits = _REFERENCE["model"](jnp.asarray([prompt], dtype=jnp.int32))
    return np.asarray(jax.nn.log_softmax(jnp.asarray(logits, jnp.float32)[0, -1]))


def test_logprobs_match_the_models_log_softmax(server, model_dir):  # noqa: F811
    url, client = server
    prompt = [5, 6, 7]
    ref = reference_logprobs(model_dir, prompt)
    best = int(np.argmax(ref))
    r = client.completions.create(model="hf", prompt=prompt, max_tokens=1, temperature=0, logprobs=3)
    lp = r.choices[0].logprobs
    np.testing.assert_allclose(lp.token_logprobs[0], ref[best], atol=2e-3)
    top = sorted(ref)[::-1][:3]
    # keyed by the token's text, so tokens that decode alike (partial UTF-8 bytes) share one entry
    assert all(np.min(np.abs(np.asarray(top) - v)) < 2e-3 for v in lp.top_logprobs[0].values())
    assert max(lp.top_logprobs[0].values()) == pytest.approx(top[0], abs=2e-3)

    messages = [{"role": "user", "content": "hi"}]
    chat = client.chat.completions.create(model="hf", messages=messages, max_tokens=3, temperature=0,
                                          logprobs=True, top_logprobs=2)
    content = chat.choices[0].logprobs.content
    assert len(content) == chat.usage.completion_tokens and all(len(c.top_logprobs) == 2 for c in content)
    assert all(abs(c.logprob - c.top_logprobs[0].logprob) < 1e-5 for c in content)  # greedy: the best one
    assert "".join(c.token for c in content) == chat.choices[0].message.content
    tok = _REFERENCE.setdefault("tokenizer", load_llm(model_dir)[1])
    ref = reference_logprobs(model_dir, tok.apply_chat_template(messages, add_generation_prompt=True))
    np.testing.assert_allclose([t.logprob for t in content[0].top_logprobs], sorted(ref)[::-1][:2], atol=2e-3)
    streamed = [c.choices[0].logprobs.content for c in client.chat.completions.create(
        model="hf", messages=messages, max_tokens=3, temperature=0, logprobs=True, top_logprobs=2, stream=True)
        if c.choices and c.choices[0].logprobs is not None]
    assert [c.logprob for part in streamed for c in part] == pytest.approx([c.logprob for c in content])


def test_json_object_output_parses(server, model_dir):  # noqa: F811
    url, client = server
    for seed in (0, 1, 2):
        r = client.chat.completions.create(model="hf", messages=[{"role": "user", "content": "json please"}],
                                           max_tokens=24, temperature=1.0, seed=seed,
                                           response_format={"type": "json_object"})
        assert isinstance(json.loads(r.choices[0].message.content), dict), r.choices[0].message.content
    # the constraint alone, tokens drawn at random among those it allows: every budget closes a real object
    tok = _REFERENCE.setdefault("tokenizer", load_llm(model_dir)[1])
    vocab, rng, keys = JSONVocab(tok), np.random.default_rng(0), 0
    for budget in (2, 3, 7, 40, 40, 40, 40, 40, 40):
        c, ids = JSONObjectConstraint(vocab, budget), []
        while not c.finished(ids):
            assert len(ids) < budget
            ids.append(int(rng.choice(np.flatnonzero(c.allowed(ids)))))
        obj = json.loads(tok.decode(ids))
        assert isinstance(obj, dict)
        keys += len(obj)
    assert keys > 0


def test_errors_are_the_clients_exception_classes(server):
    url, client = server
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="nope", prompt="x", max_tokens=2)
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="hf", prompt="x", max_tokens=2, temperature=-1)
    assert "temperature" in str(e.value)
    with pytest.raises(openai.BadRequestError, match="json_object"):
        client.chat.completions.create(model="hf", messages=[{"role": "user", "content": "x"}],
                                       response_format={"type": "json_schema", "json_schema": {"name": "a"}})
    with pytest.raises(openai.BadRequestError, match="stop_token_ids"):
        client.completions.create(model="hf", prompt="x", extra_body={"stop_token_ids": [-1]})

    def one(_):
        try:
            client.completions.create(model="hf", prompt="the cat sat", max_tokens=40, temperature=0)
            return 200
        except openai.APIStatusError as err:
            assert err.response.headers.get("retry-after") == "1"
            return err.status_code

    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        codes = list(pool.map(one, range(10)))
    assert set(codes) <= {200, 503} and codes.count(503) >= 1 and codes.count(200) >= 2, codes


def test_disconnect_mid_stream_frees_kv_blocks(server):
    url, client = server
    baseline = kv_used(url)
    stream = client.completions.create(model="hf", prompt="the cat sat on", max_tokens=100, temperature=0,
                                       stream=True)
    next(iter(stream))
    stream.close()
    deadline = time.time() + 20
    while kv_used(url) != baseline and time.time() < deadline:
        time.sleep(0.1)
    assert kv_used(url) == baseline


def test_speculative_server_answers_as_the_plain_one(server, model_dir):  # noqa: F811
    """`--speculative ngram`: the same greedy answers and logprobs as the plain server; its proposals are counted."""
    url, client = server
    proc, spec_url = start(model_dir, "--max-slots", "2", "--max-len", "128", "--speculative", "ngram",
                           "--num-speculative-tokens", "3")
    try:
        spec = openai.OpenAI(base_url=spec_url + "/v1", api_key="x", max_retries=0, timeout=60)
        for prompt in ("the cat the cat the cat", "a b a b a b a", [5, 6, 7, 5, 6, 7, 5, 6]):
            args = dict(model="hf", prompt=prompt, max_tokens=12, temperature=0, logprobs=1)
            plain, fast = client.completions.create(**args), spec.completions.create(**args)
            assert fast.choices[0].text == plain.choices[0].text
            assert fast.choices[0].logprobs.tokens == plain.choices[0].logprobs.tokens
            np.testing.assert_allclose(fast.choices[0].logprobs.token_logprobs,
                                       plain.choices[0].logprobs.token_logprobs, atol=2e-3)
        metrics = httpx.get(spec_url + "/metrics").text
        assert int(re.search(r"^pdx_llm_spec_proposed_tokens_total (\d+)$", metrics, re.M).group(1)) > 0
    finally:
        stop(proc)
    bad = subprocess.run([sys.executable, "-m", "pdx.cli", "serve", "--llm", model_dir, "--port", "0",
                          "--speculative", "/nowhere"], capture_output=True, text=True)
    assert bad.returncode == 2 and "neither 'ngram' nor a draft model directory" in bad.stderr
