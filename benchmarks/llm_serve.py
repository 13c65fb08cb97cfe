"""LLM serving side by side: pdx now (paged KV + prefix cache + batched prefill), pdx before, transformers generate.

    python benchmarks/llm_serve.py [--quick] [--rounds 3] [--streams 1,8,32,128] [--max-tokens 64]
                                   [--hidden 256 --layers 4] [--before /tmp/pdx_before] [--systems now,before,hf]

One model (a small LLaMA with random weights, a byte-level BPE tokenizer),
saved once as a Hugging Face directory, is run by:

- **pdx now**: `pdx serve --llm DIR` from this checkout (LLMEngine on a paged
  KV cache with prefix caching and batched, chunked prefill), over loopback HTTP;
- **pdx before**: the same command from a worktree of 94dfff9, the last commit
  with the slot-based engine (`git worktree add /tmp/pdx_before 94dfff9`;
  run with PYTHONPATH pointing at it);
- **transformers**: `LlamaForCausalLM.from_pretrained(DIR).generate` (torch,
  CPU, 2 threads), greedy, all of a level's prompts in one left-padded batch,
  in a child process of its own (so that its peak RSS is its own).

Every system gets the same token-id prompts (16-112 random ids, fresh for
every round, so no prefix is reused between rounds) and decodes greedily. A
level of `c` streams sends `c` prompts at once; level 1 sends `--serial`
prompts one after another (concurrency 1 repeated), which is also the "one
at a time" baseline. Each level starts with `--warmup` untimed rounds (XLA
compiles a program per padded shape, 1-2 s each on 2 cores). Per level: generated
tokens/s (completion tokens over the round's wall time), time to first token
and inter-token latency p50/p99 from the arrival times of streamed chunks
(transformers: from the time of each decoding step, taken by a logits
processor, the same for every row of the batch), median over rounds. Peak
memory is each server's VmHWM (/proc/PID/status) at the end of its runs,
compile caches included.

KV memory: during one extra round at the largest level, pdx now's /metrics
KV gauges are polled; at the sample with the most blocks in use, the
ratio blocks_used * block_size / tokens_held (the slot cache of pdx before
holds max_slots * max_len positions whatever the load).

Shared prefix: a server with room for a 512-token system prompt gets
requests `system + question_i` (the system prompt's blocks cached by a
first request) and, as the control, requests of the same lengths whose
512-token prefixes are fresh random ids (nothing to reuse); TTFT p50 of each,
one request at a time.

Goals checked (PASS/MISS): >= 4x one-at-a-time throughput at 32 streams;
>= 2x pdx before at 128 streams; KV memory within 1.2x of the tokens held;
shared-prefix TTFT >= 3x lower.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BEFORE_COMMIT = "94dfff9"
SYSTEM_TOKENS = 512


# -- the model ------------------------------------------------------------------------------------------
def make_model(directory: str, hidden: int, layers: int, vocab: int, max_pos: int):
    """A random-weight LLaMA + BPE tokenizer saved as a Hugging Face directory; returns the tokenizer."""
    from pdx import text
    from pdx.models.llama import LlamaConfig, LlamaForCausalLM, save_hf_pretrained

    tok = text.train_bpe(text.bundled_corpus()[:40], vocab_size=vocab,
                         special_tokens=("<unk>", "<s>", "</s>", "<pad>"))
    heads = max(2, hidden // 64)
    config = LlamaConfig.from_preset("tiny", vocab_size=tok.vocab_size, hidden_size=hidden,
                                     intermediate_size=(hidden * 8 // 3 + 15) // 16 * 16, num_hidden_layers=layers,
                                     num_attention_heads=heads, num_key_value_heads=max(1, heads // 2),
                                     max_position_embeddings=max_pos)
    save_hf_pretrained(LlamaForCausalLM(config, rngs=0), directory, tokenizer=tok)
    return tok, config


def make_prompts(vocab: int, count: int, seed: int):
    """`count` prompts of 16..112 random token ids (no special tokens), fresh for each seed.

    Every round sends prompts never sent before, so pdx now's prefix cache
    finds nothing to reuse outside the shared-prefix test.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    return [[int(t) for t in rng.integers(4, vocab, 16 + (i * 37) % 97)] for i in range(count)]


def level_prompts(vocab: int, streams: int, serial: int, index: int):
    """The prompts of round `index` at a level (negative: warm-up rounds)."""
    return make_prompts(vocab, serial if streams == 1 else streams, 1000 * streams + 10 + index)


# -- servers -------------------------------------------------------------------------------------------
def start_server(model_dir: str, slots: int, max_len: int, pythonpath: str | None):
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=1")
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-m", "pdx.cli", "serve", "--llm", model_dir, "--port", "0",
                             "--max-slots", str(slots), "--max-len", str(max_len), "--max-queue", "4096",
                             "--log-level", "warning"], stdout=subprocess.PIPE, text=True, env=env,
                            cwd=pythonpath or REPO)
    line = proc.stdout.readline().strip()
    found = re.search(r":(\d+)$", line)
    if not found:
        proc.kill()
        raise RuntimeError(f"server did not print its address; got {line!r}")
    url = "http://127.0.0.1:" + found.group(1)
    import httpx

    for _ in range(1500):
        try:
            if httpx.get(url + "/health/ready", timeout=5).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        time.sleep(0.2)
    raise RuntimeError("server did not become ready")


def stop_server(proc) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def vm_hwm_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def _stream(client, url: str, prompt, max_tokens: int):
    """(send time, chunk arrival times, completion tokens) of one streamed greedy completion."""
    t0 = time.perf_counter()
    arrivals, tokens = [], 0
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    async with client.stream("POST", url + "/v1/completions", json=body) as r:
        if r.status_code != 200:
            raise RuntimeError(f"request failed: {r.status_code} {(await r.aread())[:300]!r}")
        async for line in r.aiter_lines():
            if line.startswith("data: {"):
                chunk = json.loads(line[6:])
                if "error" in chunk:
                    raise RuntimeError(f"generation failed: {chunk['error'].get('message')}")
                if chunk.get("choices") and chunk["choices"][0].get("text"):
                    arrivals.append(time.perf_counter())
                if chunk.get("usage"):
                    tokens = chunk["usage"]["completion_tokens"]
    return t0, arrivals, tokens


def http_round(url: str, prompts, max_tokens: int, concurrency: int):
    """Send `prompts` with at most `concurrency` in flight; returns the round's measurements."""
    import httpx

    async def go():
        sem = asyncio.Semaphore(concurrency)
        async with httpx.AsyncClient(timeout=1800, limits=httpx.Limits(max_connections=1024)) as client:
            async def one(p):
                async with sem:
                    return await _stream(client, url, p, max_tokens)

            start = time.perf_counter()
            out = await asyncio.gather(*(one(p) for p in prompts))
            return out, time.perf_counter() - start

    results, wall = asyncio.run(go())
    ttft = [a[0] - t0 for t0, a, _ in results if a]
    itl = [b - a for _, arr, _ in results for a, b in zip(arr, arr[1:])]
    return {"tokens": sum(n for *_, n in results), "wall": wall, "ttft": ttft, "itl": itl}


def poll_metrics(url: str, stop: threading.Event, samples: list) -> None:
    import httpx

    with httpx.Client(timeout=10) as client:
        while not stop.is_set():
            try:
                text = client.get(url + "/metrics").text
            except httpx.HTTPError:
                continue
            gauges = dict(re.findall(r"^(pdx_llm_kv_\w+) (\S+)$", text, re.M))
            if gauges:
                samples.append({k: float(v) for k, v in gauges.items()})
            stop.wait(0.05)


# -- transformers (child process) ----------------------------------------------------------------------
def hf_worker(model_dir: str, spec_path: str) -> int:
    """Run transformers generate for every level in the spec; print one JSON line of measurements."""
    import torch
    from transformers import LlamaForCausalLM, LogitsProcessor, LogitsProcessorList

    torch.set_num_threads(2)
    with open(spec_path) as f:
        spec = json.load(f)
    model = LlamaForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32).eval()
    eos, pad = spec["eos"], spec["pad"]

    class Clock(LogitsProcessor):
        def __init__(self):
            self.times = []

        def __call__(self, input_ids, scores):
            self.times.append(time.perf_counter())
            return scores

    def batch(prompts, max_tokens):
        width = max(len(p) for p in prompts)
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        clock = Clock()
        t0 = time.perf_counter()
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_tokens, do_sample=False,
                                 pad_token_id=pad, eos_token_id=eos, logits_processor=LogitsProcessorList([clock]))
        wall = time.perf_counter() - t0
        tokens = 0
        for row in out[:, width:].tolist():
            tokens += row.index(eos) if eos in row else len(row)
        ttft = [clock.times[0] - t0 if clock.times else wall] * len(prompts)
        itl = [b - a for a, b in zip(clock.times, clock.times[1:])] * len(prompts)
        return {"tokens": tokens, "wall": wall, "ttft": ttft, "itl": itl}

    results = {}
    for level in spec["levels"]:
        c = level["streams"]
        batch(level["warmup"], min(8, level["max_tokens"]))
        rounds = []
        for prompts in level["prompts"]:
            if c == 1:  # one at a time
                parts = [batch([p], level["max_tokens"]) for p in prompts]
                rounds.append({"tokens": sum(p["tokens"] for p in parts), "wall": sum(p["wall"] for p in parts),
                               "ttft": [t for p in parts for t in p["ttft"]],
                               "itl": [t for p in parts for t in p["itl"]]})
            else:
                rounds.append(batch(prompts, level["max_tokens"]))
        results[str(c)] = rounds
    print(json.dumps({"levels": results, "hwm_mib": vm_hwm_mib(os.getpid())}))
    return 0


# -- summaries -----------------------------------------------------------------------------------------
def pct(values, q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def summarize(rounds):
    """Medians over rounds of tokens/s, TTFT p50/p99, ITL p50/p99 (ms)."""
    med = statistics.median
    return {"tps": med(r["tokens"] / r["wall"] for r in rounds),
            "ttft50": med(pct(r["ttft"], 0.5) for r in rounds) * 1e3,
            "ttft99": med(pct(r["ttft"], 0.99) for r in rounds) * 1e3,
            "itl50": med(pct(r["itl"], 0.5) for r in rounds) * 1e3,
            "itl99": med(pct(r["itl"], 0.99) for r in rounds) * 1e3,
            "tokens": med(r["tokens"] for r in rounds), "rounds": len(rounds)}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run_http_system(name, url, vocab, levels, args):
    """Every level on one server: warm-up rounds, then `rounds` timed rounds; returns {streams: summary}."""
    out = {}
    for c, max_tokens, rounds in levels:
        for w in range(args.warmup):  # compiles this level's prefill and decode shapes
            http_round(url, level_prompts(vocab, c, min(args.serial, 4), -1 - w), min(8, max_tokens), c)
        rows = []
        for i in range(rounds):
            rows.append(http_round(url, level_prompts(vocab, c, args.serial, i), max_tokens, c))
            log(f"{name} {c} streams round {i}: {rows[-1]['tokens'] / rows[-1]['wall']:.1f} tok/s, "
                f"TTFT p50 {pct(rows[-1]['ttft'], 0.5) * 1e3:.0f} ms")
        out[c] = summarize(rows)
    return out


def kv_round(url, vocab, c, max_tokens):
    samples, stop = [], threading.Event()
    poller = threading.Thread(target=poll_metrics, args=(url, stop, samples), daemon=True)
    poller.start()
    http_round(url, level_prompts(vocab, c, 0, 99), max_tokens, c)
    stop.set()
    poller.join()
    held = [s for s in samples if s.get("pdx_llm_kv_tokens_held", 0) > 0]
    return max(held, key=lambda s: s["pdx_llm_kv_blocks_used"]) if held else None


def prefix_test(url, tok, rounds: int, requests: int, max_tokens: int, seed: int = 0):
    """TTFT p50 (ms) of system+question prompts (prefix cached) vs fresh-prefix prompts of the same lengths."""
    import numpy as np

    rng = np.random.default_rng(seed)
    vocab = tok.vocab_size
    system = [int(i) for i in rng.integers(4, vocab, SYSTEM_TOKENS)]
    questions = [[int(i) for i in rng.integers(4, vocab, 16 + 3 * k)] for k in range(requests)]

    def fresh():
        return [[int(i) for i in rng.integers(4, vocab, SYSTEM_TOKENS)] + q for q in questions]

    shared = [system + q for q in questions]
    http_round(url, [system + [5] * 16], 2, 1)          # caches the system prompt's blocks
    http_round(url, fresh()[:2], 2, 1)                  # compiles the long-prefill shapes
    http_round(url, shared[:2], 2, 1)
    warm, cold = [], []
    for _ in range(rounds):
        warm.append(pct(http_round(url, shared, max_tokens, 1)["ttft"], 0.5))
        cold.append(pct(http_round(url, fresh(), max_tokens, 1)["ttft"], 0.5))
    return statistics.median(warm) * 1e3, statistics.median(cold) * 1e3


def ensure_before(path: str) -> None:
    if os.path.isdir(os.path.join(path, "pdx")):
        return
    log(f"git worktree add {path} {BEFORE_COMMIT}")
    subprocess.run(["git", "-C", REPO, "worktree", "add", path, BEFORE_COMMIT], check=True,
                   stdout=subprocess.DEVNULL)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="bounded run: 1 timed round per level, 16 tokens at 128 streams, 8 serial prompts")
    parser.add_argument("--streams", default="1,8,32,128", help="concurrency levels (default %(default)s)")
    parser.add_argument("--max-tokens", type=int, default=64, help="tokens per request (default %(default)s)")
    parser.add_argument("--max-tokens-top", type=int, default=None,
                        help="tokens per request at the largest level (default: --max-tokens)")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per level (default %(default)s)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed rounds per level first (default %(default)s)")
    parser.add_argument("--serial", type=int, default=32,
                        help="prompts sent one at a time for the 1-stream level (default %(default)s)")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=1024)
    parser.add_argument("--max-len", type=int, default=256, help="servers' context length (default %(default)s)")
    parser.add_argument("--systems", default="now,before,hf", help="subset of now,before,hf (default %(default)s)")
    parser.add_argument("--before", default="/tmp/pdx_before", help=f"worktree of {BEFORE_COMMIT}")
    parser.add_argument("--now", default=None, metavar="TREE",
                        help="run pdx now from this tree (e.g. a worktree of a commit; default: this checkout)")
    parser.add_argument("--prefix-requests", type=int, default=8)
    parser.add_argument("--hf-worker", nargs=2, metavar=("DIR", "SPEC"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.hf_worker:
        return hf_worker(*args.hf_worker)
    if args.quick:
        args.rounds, args.serial, args.warmup = 1, min(args.serial, 8), 1
        args.max_tokens_top = args.max_tokens_top or 16
    systems = args.systems.split(",")
    bad = set(systems) - {"now", "before", "hf"}
    if bad:
        parser.error(f"--systems: unknown {sorted(bad)}; choose from now,before,hf")
    streams = sorted(int(s) for s in args.streams.split(","))
    top = streams[-1]
    levels = [(c, (args.max_tokens_top or args.max_tokens) if c == top else args.max_tokens, args.rounds)
              for c in streams]
    if "before" in systems:
        ensure_before(args.before)

    work = tempfile.mkdtemp(prefix="llm_serve_")
    model_dir = os.path.join(work, "model")
    max_pos = max(args.max_len, SYSTEM_TOKENS + 128)
    tok, config = make_model(model_dir, args.hidden, args.layers, args.vocab, max_pos)
    vocab = config.vocab_size
    if 112 + args.max_tokens > args.max_len:
        parser.error(f"--max-len {args.max_len} is too short for 112-token prompts + --max-tokens {args.max_tokens}")
    block_size = int(subprocess.run(
        [sys.executable, "-c", "import inspect; from pdx.models.llama import LLMEngine; "
         "print(inspect.signature(LLMEngine).parameters['block_size'].default)"],
        capture_output=True, text=True, check=True, cwd=args.now or REPO,
        env=dict(os.environ, PYTHONPATH=args.now or REPO)).stdout.split()[-1])
    now_rev = subprocess.run(["git", "-C", args.now or REPO, "log", "-1", "--format=%h"], capture_output=True,
                             text=True).stdout.strip()
    log(f"model: hidden {config.hidden_size}, {config.num_hidden_layers} layers, {config.num_attention_heads} heads "
        f"({config.num_key_value_heads} kv), vocab {config.vocab_size}; levels {levels}")

    results, hwm, kv, prefix = {}, {}, None, None
    t_start = time.time()
    for name in [s for s in ("now", "before") if s in systems]:
        proc, url = start_server(model_dir, top, args.max_len, args.before if name == "before" else args.now)
        try:
            results[name] = run_http_system(name, url, vocab, levels, args)
            if name == "now":
                kv = kv_round(url, vocab, top, levels[-1][1])
            hwm[name] = vm_hwm_mib(proc.pid)
        finally:
            stop_server(proc)
    if "now" in systems:  # shared system prompt: a server whose context holds 512 tokens + question + answer
        proc, url = start_server(model_dir, 16, SYSTEM_TOKENS + 128, args.now)
        try:
            prefix = prefix_test(url, tok, max(args.rounds, 3), args.prefix_requests, 8)
        finally:
            stop_server(proc)
        log(f"prefix TTFT p50: shared {prefix[0]:.1f} ms, fresh {prefix[1]:.1f} ms")
    if "hf" in systems:
        spec = {"eos": tok.eos_token_id, "pad": tok.pad_token_id,
                "levels": [{"streams": c, "max_tokens": m, "rounds": r,
                            "warmup": level_prompts(vocab, c, min(args.serial, 4), -1),
                            "prompts": [level_prompts(vocab, c, args.serial, i) for i in range(r)]}
                           for c, m, r in levels]}
        spec_path = os.path.join(work, "hf_spec.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--hf-worker", model_dir, spec_path],
                             capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"transformers run failed:\n{out.stderr[-3000:]}")
        data = json.loads(out.stdout.strip().splitlines()[-1])
        results["hf"] = {int(c): summarize(rows) for c, rows in data["levels"].items()}
        hwm["hf"] = data["hwm_mib"]
        for c in streams:
            log(f"hf {c} streams: {results['hf'][c]['tps']:.1f} tok/s")

    # -- the table --
    names = {"now": f"pdx now ({now_rev}, paged+prefix, HTTP)", "before": f"pdx before ({BEFORE_COMMIT}, slots, HTTP)",
             "hf": "transformers generate (torch, in-process batch)"}
    print(f"\nmodel: LLaMA hidden {config.hidden_size}, {config.num_hidden_layers} layers, "
          f"{config.num_attention_heads} heads ({config.num_key_value_heads} kv), vocab {config.vocab_size}, random "
          f"weights; servers --max-slots {top} --max-len {args.max_len}; prompts 16-112 tokens, greedy; "
          f"{args.rounds} timed round(s) per level (median); 1 stream = {args.serial} requests one at a time; "
          f"{time.time() - t_start:.0f} s")
    print("| system | streams | max_tokens | tokens/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms | "
          "peak RSS MiB |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for name in [s for s in ("now", "before", "hf") if s in results]:
        for c, max_tokens, _ in levels:
            s = results[name][c]
            print(f"| {names[name]} | {c} | {max_tokens} | {s['tps']:.1f} | {s['ttft50']:.1f} | {s['ttft99']:.1f} | "
                  f"{s['itl50']:.1f} | {s['itl99']:.1f} | {hwm[name]:.0f} |")
    goals = []
    if "now" in results and 1 in results["now"] and 32 in results["now"]:
        r = results["now"][32]["tps"] / results["now"][1]["tps"]
        goals.append(("32 streams vs one at a time (pdx now)", f"{r:.2f}x", ">= 4x", r >= 4))
    if "now" in results and "before" in results:
        r = results["now"][top]["tps"] / results["before"][top]["tps"]
        goals.append((f"{top} streams, pdx now vs pdx before", f"{r:.2f}x", ">= 2x", r >= 2))
    if kv:
        used, held = kv["pdx_llm_kv_blocks_used"], kv["pdx_llm_kv_tokens_held"]
        r = used * block_size / held
        goals.append((f"KV positions / tokens held at peak ({used:.0f} blocks x {block_size} / {held:.0f} tokens; "
                      f"the slot cache: {top * args.max_len} positions = {top * args.max_len / held:.2f}x)",
                      f"{r:.2f}x", "<= 1.2x", r <= 1.2))
    if prefix:
        r = prefix[1] / prefix[0]
        goals.append((f"TTFT p50, fresh 512-token prefix {prefix[1]:.1f} ms vs shared (cached) {prefix[0]:.1f} ms",
                      f"{r:.2f}x", ">= 3x", r >= 3))
    if "now" in results and "hf" in results:
        r = results["now"][top]["tps"] / results["hf"][top]["tps"]
        goals.append((f"{top} streams, pdx now vs transformers generate (no goal)", f"{r:.2f}x", "-", None))
    print("\n| goal | measured | target | |\n|---|--:|--:|---|")
    for what, got, target, ok in goals:
        print(f"| {what} | {got} | {target} | {'' if ok is None else 'PASS' if ok else 'MISS'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
