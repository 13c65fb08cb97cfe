"""`pdx serve --llm` under hostile or careless clients: one real server process on loopback (2 slots, a
queue of 2, a tiny llama with a chat template that is slow for one message), shared by the module and
stopped with SIGTERM by the last test.

Checked: every request field (NaN/Inf, ranges, bools, unknown names, lone surrogates, token ids against
the vocabulary, byte budgets before tokenizing) is 400 with OpenAI's error object; `n` is honoured; a stop
string spanning two deltas streams the same text as the non-streamed answer; a client that leaves frees its
slot; bursts admit exactly slots + queue; a slow template render keeps `/health/live` under 100 ms and
another stream going; SIGTERM answers queued requests 503 and exits within the grace period.
"""

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest

from pdx import text
from pdx.models.llama import LlamaConfig, LlamaForCausalLM, save_hf_pretrained

CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
# a render that takes seconds of pure-Python work for one message (or is stopped by the template budget)
SLOW = ("{% if messages[0]['content'] == 'slow' %}{% for i in range(3000) %}{% for j in range(1000) %}"
        "{% endfor %}{% endfor %}{% endif %}")
GRACE_S = 3.0
VOCAB = 320

# The pair is built in the server process (the same tiny model the other server tests use).
SERVER_SCRIPT = r"""
import json, sys
from pdx.export._llm_server import serve_llm
from pdx.models.llama import LlamaConfig, LlamaForCausalLM
from pdx.text import Tokenizer

directory, options = sys.argv[1], json.loads(sys.argv[2])
tok = Tokenizer.from_pretrained(directory)
tok.eos_token = None  # greedy decoding never ends early: every request holds its slot for max_tokens
model = LlamaForCausalLM(LlamaConfig.from_preset("tiny", vocab_size=%d, max_position_embeddings=256), rngs=0)
serve_llm((model, tok), port=0, log_level="warning", name="tiny", **options)
""" % VOCAB


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    out = tmp_path_factory.mktemp("llm") / "hf"
    tok = text.train_bpe(text.bundled_corpus()[:40], vocab_size=VOCAB, chat_template=SLOW + CHATML,
                         special_tokens=("<unk>", "<s>", "</s>", "<pad>", "<|im_start|>", "<|im_end|>"))
    model = LlamaForCausalLM(LlamaConfig.from_preset("tiny", vocab_size=VOCAB, max_position_embeddings=256), rngs=0)
    save_hf_pretrained(model, str(out), tokenizer=tok)
    options = dict(max_slots=2, max_queue=2, max_len=256, timeout_s=30.0, graceful_timeout_s=GRACE_S,
                   max_body_bytes=4_000_000)
    log = open(tmp_path_factory.mktemp("logs") / "llm.log", "w+")
    env = dict(os.environ, PYTHONUNBUFFERED="1", XLA_FLAGS="--xla_force_host_platform_device_count=1")
    proc = subprocess.Popen([sys.executable, "-c", SERVER_SCRIPT, str(out), json.dumps(options)],
                            stdout=log, stderr=subprocess.STDOUT, env=env)

    def output():
        log.seek(0)
        return log.read()

    deadline = time.monotonic() + 120
    while not (match := re.search(r"listening on (http://\S+)", output())):
        assert proc.poll() is None and time.monotonic() < deadline, output()
        time.sleep(0.05)
    url = match.group(1)
    while True:
        try:
            if httpx.get(url + "/health/ready", timeout=5).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, output()
        time.sleep(0.1)
    srv = type("Server", (), {"proc": proc, "url": url, "output": staticmethod(output)})
    srv.long_prompt = [10, 11, 12]
    srv.directory = str(out)
    yield srv
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _metric(text_, name, **labels):
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    pattern = re.escape(name) + (r"\{" + re.escape(want) + r"\}" if labels else "") + r" ([0-9.e+-]+)$"
    found = re.search(pattern, text_, re.M)
    return float(found.group(1)) if found else 0.0


def _stream(url, body):
    """(text deltas, finish reason) of a streamed completion."""
    deltas, finish = [], None
    with httpx.stream("POST", url + "/v1/completions", json={**body, "stream": True}, timeout=60) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            if line == "data: [DONE]":
                break
            if line.startswith("data: "):
                choice = json.loads(line[6:])["choices"][0]
                deltas.append(choice["text"])
                finish = choice["finish_reason"] or finish
    return deltas, finish


def test_every_field_is_checked_with_openai_errors_and_n_is_honoured(server):
    url = server.url
    raw = {  # bodies json.dumps cannot write: NaN/Infinity literals, lone surrogates
        '{"prompt": "hi", "temperature": NaN}': "temperature",
        '{"prompt": "hi", "top_p": Infinity}': "top_p",
        '{"prompt": "hi", "temperature": -Infinity}': "temperature",
        '{"prompt": "a \\ud800 b"}': "prompt",
        '{"prompt": "hi", "stop": "\\udfff"}': "stop",
        '{"prompt": "hi", "user": "\\ud83d"}': "user",
    }
    bad = [({"prompt": "hi", "n": 0}, "n"), ({"prompt": "hi", "n": 9}, "n"), ({"prompt": "hi", "n": True}, "n"),
           ({"prompt": "hi", "max_tokens": True}, "max_tokens"), ({"prompt": "hi", "max_tokens": 256}, "max_tokens"),
           ({"prompt": "hi", "max_tokens": 1.5}, "max_tokens"), ({"prompt": "hi", "top_p": 0}, "top_p"),
           ({"prompt": "hi", "top_p": 1.01}, "top_p"), ({"prompt": "hi", "top_k": -1}, "top_k"),
           ({"prompt": "hi", "temperature": -0.1}, "temperature"), ({"prompt": "hi", "seed": -1}, "seed"),
           ({"prompt": "hi", "temperature": 10 ** 400}, "temperature"),
           ({"prompt": [5, VOCAB]}, "prompt"), ({"prompt": [5, -1]}, "prompt"), ({"prompt": [5, True]}, "prompt"),
           ({"prompt": ["a", "b"]}, "prompt"), ({"prompt": ""}, "prompt"), ({"prompt": "hi", "stream": "yes"}, "stream"),
           ({"prompt": "hi", "frobnicate": 1}, "frobnicate"), ({"prompt": "hi", "presence_penalty": 1}, "presence_penalty"),
           ({"prompt": "hi", "logprobs": 21}, "logprobs"), ({"prompt": "hi", "stop": ["x"] * 9}, "stop"),
           ({"prompt": "hi", "stream_options": {"include_usage": 1}}, "stream_options")]
    chat_bad = [({"messages": [{"role": "user", "content": 5}]}, "messages"),
                ({"messages": [{"role": "user", "content": "hi", "tool_calls": 5}]}, "messages"),
                ({"messages": [{"role": "user", "content": "hi", "tool_calls": [{"function": 3}]}]}, "messages"),
                ({"messages": [{"role": "user", "content": "hi"}], "tools": {"a": 1}}, "tools"),
                ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "max_completion_tokens": 5},
                 "max_completion_tokens")]
    with httpx.Client(timeout=30) as client:
        cases = [(client.post(url + "/v1/completions", content=body.encode(),
                              headers={"content-type": "application/json"}), field, body) for body, field in raw.items()]
        cases += [(client.post(url + "/v1/completions", json=body), field, body) for body, field in bad]
        cases += [(client.post(url + "/v1/chat/completions", json=body), field, body) for body, field in chat_bad]
        cases += [(client.post(url + "/v1/chat/completions", content=b'{"messages": [{"role": "user", '
                                                                       b'"content": "\\ud800"}]}'), "messages", "surrogate")]
        for r, field, body in cases:
            assert r.status_code == 400, (body, r.status_code, r.text)
            error = r.json()["error"]
            assert set(error) == {"message", "type", "param", "code"} and error["type"] == "invalid_request_error"
            assert field in error["message"], (body, error)
        assert str(VOCAB) in client.post(url + "/v1/completions", json={"prompt": [5, VOCAB + 7]}).json()["error"][
            "message"]

        # a 2 MB prompt: refused by its byte count before tokenizing, fast, while the server stays live
        start = time.perf_counter()
        r = client.post(url + "/v1/completions", json={"prompt": "word " * 400_000, "max_tokens": 4})
        took = time.perf_counter() - start
        assert r.status_code == 400 and "bytes" in r.json()["error"]["message"], r.text
        assert took < 1.0, f"a 2 MB prompt took {took:.2f} s to refuse"

        # n is honoured: three choices, seeded seed, seed+1, seed+2 (the first equals the same request with n=1)
        ask = {"prompt": "the", "max_tokens": 6, "temperature": 1.0, "seed": 11}
        three = client.post(url + "/v1/completions", json={**ask, "n": 3}).json()
        assert [c["index"] for c in three["choices"]] == [0, 1, 2]
        one = client.post(url + "/v1/completions", json=ask).json()
        assert three["choices"][0]["text"] == one["choices"][0]["text"]
        assert three["usage"]["completion_tokens"] == sum(
            client.post(url + "/v1/completions", json={**ask, "seed": 11 + i}).json()["usage"]["completion_tokens"]
            for i in range(3))
        streamed = {}
        with client.stream("POST", url + "/v1/completions", json={**ask, "n": 3, "stream": True}) as s:
            for line in s.iter_lines():
                if line.startswith("data: {"):
                    for c in json.loads(line[6:])["choices"]:
                        streamed[c["index"]] = streamed.get(c["index"], "") + c["text"]
        assert [streamed[i] for i in range(3)] == [c["text"] for c in three["choices"]]
        chat = client.post(url + "/v1/chat/completions", json={
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                         {"role": "assistant", "content": None,
                          "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                         {"role": "user", "content": "ok"}], "max_tokens": 3, "temperature": 0})
        assert chat.status_code == 200, chat.text

        metrics = client.get(url + "/metrics").text
        assert _metric(metrics, "pdx_llm_requests_total", route="completions", status="400") >= len(raw) + len(bad)
        assert _metric(metrics, "pdx_llm_requests_total", route="chat", status="400") >= len(chat_bad) + 1


def test_a_stop_string_spanning_two_deltas_streams_the_non_streamed_text(server):
    url = server.url
    base = {"prompt": server.long_prompt, "max_tokens": 40, "temperature": 0}
    deltas, _ = _stream(url, base)
    full = "".join(deltas)
    spans = []
    at = 0
    for a, b in zip(deltas, deltas[1:]):
        at += len(a)
        if a and b:
            stop = full[at - min(2, len(a)):at + min(2, len(b))]
            if full.find(stop) == at - min(2, len(a)):
                spans.append(stop)
    assert spans, deltas
    for stop in spans[:3]:
        alone = httpx.post(url + "/v1/completions", json={**base, "stop": stop}, timeout=60).json()["choices"][0]
        pieces, finish = _stream(url, {**base, "stop": [stop, "zzzz"]})
        assert alone["finish_reason"] == finish == "stop" and stop not in alone["text"]
        assert "".join(pieces) == alone["text"] == full[:full.find(stop)], (stop, pieces, alone)


def test_bursts_admit_slots_plus_queue_and_a_client_that_leaves_frees_its_slot(server):
    url = server.url
    long = {"prompt": server.long_prompt, "max_tokens": 200, "temperature": 0}
    start = time.perf_counter()
    httpx.post(url + "/v1/completions", json=long, timeout=60)
    alone_s = time.perf_counter() - start

    async def burst():
        async with httpx.AsyncClient(timeout=120) as client:
            return await asyncio.gather(*(client.post(url + "/v1/completions", json=long) for _ in range(10)))

    responses = asyncio.run(burst())
    codes = sorted(r.status_code for r in responses)
    assert codes == [200] * 4 + [503] * 6, codes
    assert all(r.json()["error"]["code"] == "unavailable" for r in responses if r.status_code == 503)

    # a non-streaming client that leaves: its slot is free long before its 200 tokens would be done
    with socket.create_connection((url.split("//")[1].split(":")[0], int(url.rsplit(":", 1)[1]))) as sock:
        payload = json.dumps({**long, "max_tokens": 250}).encode()
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                     b"content-length: %d\r\n\r\n%s" % (len(payload), payload))
        time.sleep(0.3)
    left = time.perf_counter()
    while True:
        metrics = httpx.get(url + "/metrics").text
        if _metric(metrics, "pdx_llm_active_slots") == 0 and _metric(metrics, "pdx_llm_admitted_requests") == 0:
            break
        assert time.perf_counter() - left < max(2.0, alone_s), "the slot of a client that left stayed busy"
        time.sleep(0.02)
    assert _metric(metrics, "pdx_llm_requests_total", route="completions", status="499") == 1
    assert _metric(metrics, "pdx_llm_requests_total", route="completions", status="503") >= 6


def test_a_slow_template_keeps_liveness_and_other_streams(server):
    url = server.url
    slow = {}

    def render():
        start = time.perf_counter()
        r = httpx.post(url + "/v1/chat/completions", timeout=60,
                       json={"messages": [{"role": "user", "content": "slow"}], "max_tokens": 2})
        slow["status"], slow["seconds"] = r.status_code, time.perf_counter() - start

    thread = threading.Thread(target=render)
    thread.start()
    time.sleep(0.1)
    gaps, last = [], None
    with httpx.Client(timeout=10) as client:
        with client.stream("POST", url + "/v1/completions",
                           json={"prompt": server.long_prompt, "max_tokens": 120, "temperature": 0,
                                 "stream": True}) as s:
            lives = []
            for line in s.iter_lines():
                now = time.perf_counter()
                if last is not None:
                    gaps.append(now - last)
                last = now
                if thread.is_alive() and len(lives) < 20:
                    t = time.perf_counter()
                    assert client.get(url + "/health/live").status_code == 200
                    lives.append(time.perf_counter() - t)
    thread.join(60)
    print(f"\nslow render: {slow}, /health/live max {max(lives) * 1000:.1f} ms over {len(lives)}, "
          f"stream gap max {max(gaps) * 1000:.0f} ms")
    assert slow["status"] in (200, 400) and slow["seconds"] > 0.3, slow
    # < 100 ms each; one outlier allowed for a loaded shared CI machine (the client shares its cores)
    assert len(lives) >= 5 and sorted(lives)[-2] < 0.1, lives
    assert max(gaps) < 1.0, max(gaps)


def test_sigterm_answers_queued_requests_503_and_exits_within_the_grace_period(server):
    url = server.url
    long = {"prompt": server.long_prompt, "max_tokens": 250, "temperature": 0}
    results = []

    def ask(route="/v1/completions", body=long):
        r = httpx.post(url + route, json=body, timeout=60)
        results.append((time.monotonic(), r.status_code, r.json(), route))

    threads = [threading.Thread(target=ask) for _ in range(3)]  # 2 in slots, 1 waiting
    threads.append(threading.Thread(target=ask, args=("/v1/chat/completions", {
        "messages": [{"role": "user", "content": "slow"}], "max_tokens": 2})))  # rendering at SIGTERM
    for t in threads:
        t.start()
        time.sleep(0.05)
    deadline = time.monotonic() + 10
    while _metric(httpx.get(url + "/metrics").text, "pdx_llm_admitted_requests") < 4:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    start = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    for t in threads:
        t.join(30)
    code = server.proc.wait(30)
    exited = time.monotonic() - start
    answered = sorted(round(at - start, 2) for at, *_ in results)
    statuses = sorted(s for _, s, _, _ in results)
    print(f"\nSIGTERM: answers {statuses} after {answered} s, exit code {code} after {exited:.2f} s "
          "(the rest is the interpreter tearing down XLA)")
    assert code == 0 and len(results) == 4 and set(statuses) <= {200, 503} and statuses.count(503) >= 2, results
    assert max(answered) < GRACE_S, answered
    assert exited < GRACE_S + 4.0, exited
    for at, status, body, route in results:
        if status == 503:
            assert body["error"]["type"] == "server_error" and "shutting down" in body["error"]["message"]
        if route == "/v1/chat/completions" or status == 503 and "not started" in body["error"]["message"]:
            assert at - start < 0.5, (route, at - start)  # queued and rendering: answered at once
    assert "Traceback" not in server.output()


def test_metrics_count_uncaught_500s_and_stop_tails_are_held_back():
    """In process: the counting wrapper sees the 500 Starlette answers for an uncaught error; `_held`
    keeps exactly the tail that may begin a stop string."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from pdx.export._llm_server import _CountingApp, _held, _Metrics

    async def boom(request):
        raise RuntimeError("a bug")

    async def fine(request):
        return PlainTextResponse("ok")

    metrics = _Metrics()
    app = _CountingApp(Starlette(routes=[Route("/v1/completions", boom, methods=["POST"]),
                                         Route("/health/live", fine)]), metrics)

    async def calls():
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return [(await client.post("/v1/completions")).status_code, (await client.get("/health/live")).status_code,
                    (await client.get("/nowhere")).status_code]

    assert asyncio.run(calls()) == [500, 200, 404]
    assert metrics.requests == {("completions", 500): 1, ("health", 200): 1, ("other", 404): 1}
    for text_, stops, held in (("abc", ("cd",), 1), ("abc", ("bcd",), 2), ("abc", ("xyz",), 0),
                               ("abc", ("c", "bcx"), 2), ("", ("ab",), 0), ("aaa", ("aab",), 2)):
        assert _held(text_, stops) == held, (text_, stops)


def test_a_tokenizer_larger_than_the_model_vocabulary_is_refused_at_load(server, tmp_path):
    import shutil
    from types import SimpleNamespace

    from pdx.export import create_llm_app
    from pdx.text import Tokenizer

    small = tmp_path / "hf"
    shutil.copytree(server.directory, small)
    config = json.loads((small / "config.json").read_text())
    (small / "config.json").write_text(json.dumps({**config, "vocab_size": 300}))
    tok = Tokenizer.from_pretrained(server.directory)
    for source in (str(small), (SimpleNamespace(config=SimpleNamespace(vocab_size=300)), tok)):
        with pytest.raises(ValueError, match=f"tokenizer has {VOCAB} ids but the model's vocabulary .*has 300"):
            create_llm_app(source)
