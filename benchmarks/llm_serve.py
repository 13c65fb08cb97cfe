"""LLM serving side by side: pdx now (paged KV + prefix cache + batched prefill), pdx before, transformers generate.

    python benchmarks/llm_serve.py [--quick] [--rounds 3] [--streams 1,8,32,128] [--max-tokens 64]
                                   [--hidden 256 --layers 4] [--before /tmp/pdx_before] [--now TREE] [--systems now,before,hf]

One model (a small LLaMA with random weights, a byte-level BPE tokenizer),
saved once as a Hugging Face directory, is run by:

- **pdx now**: `pdx serve --llm DIR` from this checkout (LLMEngine on a paged
  KV cache with prefix caching and batched, chunked prefill), over loopback HTTP;
- **pdx before**: the same command from a worktree of 94dfff9, the last commit
  with the slot-based engine (`git worktree add /tmp/pdx_before 94dfff9`;
  run with PYTHONPATH pointing at it);
- **transformers**: `LlamaForCausalLM.from_pretrained(DIR).generate` (torch,
  CPU, `--torch-threads`, OMP_WAIT_POLICY=PASSIVE), greedy, all of a level's prompts in one left-padded batch,
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
def start_server(model_dir: str, slots: int, max_len: int, pythonpath: str | None, log_path: str):
    """A `pdx serve --llm` process (from `pythonpath`'s tree, or this checkout) and its URL.

    Its stderr goes to `log_path` with JAX_LOG_COMPILES=1: `compiles(log_path)`
    tells whether a round made XLA compile something.
    """
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=1", JAX_LOG_COMPILES="1")
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-m", "pdx.cli", "serve", "--llm", model_dir, "--port", "0",
                             "--max-slots", str(slots), "--max-len", str(max_len), "--max-queue", "4096", "--timeout-s", "900",
                             "--log-level", "warning"], stdout=subprocess.PIPE, stderr=open(log_path, "w"), text=True, env=env,
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


def compiles(log_path: str) -> int:
    with open(log_path, errors="replace") as f:
        return sum("Finished XLA compilation" in line for line in f)


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
def hf_worker(model_dir: str, eos: int, pad: int, threads: int) -> int:
    """Serve rounds over stdin/stdout, one JSON line each way: {"prompts", "max_tokens", "serial"} -> a round.

    An empty line ends it; the last line written is {"hwm_mib": peak RSS}.
    """
    # this script's folder holds benchmarks/kernels.py, which would shadow the `kernels` package transformers imports
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
    import torch
    from transformers import LlamaForCausalLM, LogitsProcessor, LogitsProcessorList

    torch.set_num_threads(threads)
    model = LlamaForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32).eval()

    class Clock(LogitsProcessor):
        """Called once per decoding step, right after the step's forward: the time each token exists."""

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

    for line in sys.stdin:
        if not line.strip():
            break
        job = json.loads(line)
        if job["serial"]:  # one at a time
            parts = [batch([p], job["max_tokens"]) for p in job["prompts"]]
            result = {"tokens": sum(p["tokens"] for p in parts), "wall": sum(p["wall"] for p in parts),
                      "ttft": [t for p in parts for t in p["ttft"]], "itl": [t for p in parts for t in p["itl"]]}
        else:
            result = batch(job["prompts"], job["max_tokens"])
        print(json.dumps(result), flush=True)
    print(json.dumps({"hwm_mib": vm_hwm_mib(os.getpid())}), flush=True)
    return 0


class HFRunner:
    """The transformers child process: `round(prompts, max_tokens, serial)` like `http_round`."""

    def __init__(self, model_dir: str, eos: int, pad: int, threads: int):
        # OpenMP's default spin-waiting makes 2-thread torch 20-40x slower when other processes share the 2 cores
        env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--hf-worker", model_dir,
                                      str(eos), str(pad), str(threads)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)

    def round(self, prompts, max_tokens: int, serial: bool):
        self.proc.stdin.write(json.dumps({"prompts": prompts, "max_tokens": max_tokens, "serial": serial}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the transformers process exited with {self.proc.wait()}")
        return json.loads(line)

    def close(self) -> float:
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        hwm = json.loads(self.proc.stdout.readline())["hwm_mib"]
        self.proc.wait(60)
        return hwm


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


def run_levels(runners: dict, logs: dict, vocab: int, levels, args):
    """Warm every system at every level, then the timed rounds, each round of a level on every system in turn.

    A level's warm-up rounds (full length) repeat, `--warmup` to `--warmup-max`
    times, until a round compiles nothing new in any server. Interleaving keeps
    the systems comparable when other load on the machine changes during the
    run. Returns ({system: {streams: summary}}, {system: compiles during timed rounds}).
    """
    for c, max_tokens, _ in levels:
        for w in range(args.warmup_max):
            before = {name: compiles(path) for name, path in logs.items()}
            for name, run in runners.items():
                if name in logs or w == 0:
                    run(level_prompts(vocab, c, args.serial, -1 - w), max_tokens, c)
            new = {name: compiles(path) - before[name] for name, path in logs.items()}
            log(f"warm-up {w} at {c} streams: XLA compiles {new}")
            if w + 1 >= args.warmup and not any(new.values()):
                break
    rows = {name: {c: [] for c, _, _ in levels} for name in runners}
    start = {name: compiles(path) for name, path in logs.items()}
    for c, max_tokens, rounds in levels:
        for i in range(rounds):
            prompts = level_prompts(vocab, c, args.serial, i)
            for name, run in runners.items():
                r = run(prompts, max_tokens, c)
                rows[name][c].append(r)
                log(f"{name} {c} streams round {i}: {r['tokens'] / r['wall']:.1f} tok/s, "
                    f"TTFT p50 {pct(r['ttft'], 0.5) * 1e3:.0f} ms, ITL p50 {pct(r['itl'], 0.5) * 1e3:.1f} ms")
    late = {name: compiles(path) - start[name] for name, path in logs.items()}
    return {name: {c: summarize(r) for c, r in per.items()} for name, per in rows.items()}, late


def kv_round(url, vocab, c, max_tokens):
    samples, stop = [], threading.Event()
    poller = threading.Thread(target=poll_metrics, args=(url, stop, samples), daemon=True)
    poller.start()
    http_round(url, level_prompts(vocab, c, 0, 99), max_tokens, c)
    stop.set()
    poller.join()
    held = [s for s in samples if s.get("pdx_llm_kv_tokens_held", 0) > 0]
    return max(held, key=lambda s: s["pdx_llm_kv_blocks_used"]) if held else None


def prefix_test(url, vocab: int, rounds: int, requests: int, max_tokens: int, seed: int = 0):
    """TTFT p50 (ms) of system + question prompts (the system prompt's blocks cached) vs prompts of the same
    lengths whose 512-token prefixes are fresh random ids; questions are fresh every round.

    Returns {concurrency: (shared ms, fresh ms)} for one request at a time and for `requests` at once.
    """
    import numpy as np

    rng = np.random.default_rng(seed)

    def ids(n):
        return [int(i) for i in rng.integers(4, vocab, n)]

    system = ids(SYSTEM_TOKENS)
    http_round(url, [system + ids(16)], 2, 1)  # caches the system prompt's blocks
    out = {}
    for c in (1, requests):
        for _ in range(2):  # compiles the shapes of both kinds at this concurrency
            questions = [ids(16 + 3 * k) for k in range(requests)]
            http_round(url, [system + q for q in questions], max_tokens, c)
            http_round(url, [ids(SYSTEM_TOKENS) + q for q in questions], max_tokens, c)
        warm, cold = [], []
        for _ in range(rounds):
            questions = [ids(16 + 3 * k) for k in range(requests)]
            warm.append(pct(http_round(url, [system + q for q in questions], max_tokens, c)["ttft"], 0.5))
            cold.append(pct(http_round(url, [ids(SYSTEM_TOKENS) + q for q in questions], max_tokens, c)["ttft"], 0.5))
        out[c] = (statistics.median(warm) * 1e3, statistics.median(cold) * 1e3)
        log(f"prefix TTFT p50 at concurrency {c}: shared {out[c][0]:.1f} ms, fresh {out[c][1]:.1f} ms")
    return out


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
    parser.add_argument("--warmup", type=int, default=1, help="least untimed rounds per level (default %(default)s)")
    parser.add_argument("--warmup-max", type=int, default=4,
                        help="most untimed rounds per level, while a round still compiles (default %(default)s)")
    parser.add_argument("--serial", type=int, default=16,
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
    parser.add_argument("--torch-threads", type=int, default=1,
                        help="torch threads for transformers (default %(default)s: faster than 2 on a shared 2-core "
                             "machine)")
    parser.add_argument("--hf-worker", nargs=4, metavar=("DIR", "EOS", "PAD", "THREADS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.hf_worker:
        return hf_worker(args.hf_worker[0], *(int(v) for v in args.hf_worker[1:]))
    if args.quick:
        args.rounds, args.serial, args.warmup_max = 1, min(args.serial, 8), 2
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

    hwm, kv, prefix = {}, None, None
    t_start = time.time()
    servers, runners, logs, hf = {}, {}, {}, None
    try:
        for name in [s for s in ("now", "before") if s in systems]:
            logs[name] = os.path.join(work, f"{name}.log")
            servers[name] = start_server(model_dir, top, args.max_len, args.before if name == "before" else args.now,
                                         logs[name])
            url = servers[name][1]
            runners[name] = lambda prompts, m, c, url=url: http_round(url, prompts, m, c)
        if "hf" in systems:
            hf = HFRunner(model_dir, tok.eos_token_id, tok.pad_token_id, args.torch_threads)
            runners["hf"] = lambda prompts, m, c: hf.round(prompts, m, c == 1)
        log(f"started {', '.join(runners)}")
        results, late = run_levels(runners, logs, vocab, levels, args)
        if "now" in servers:
            kv = kv_round(servers["now"][1], vocab, top, levels[-1][1])
        for name, (proc, _) in servers.items():
            hwm[name] = vm_hwm_mib(proc.pid)
        if hf is not None:
            hwm["hf"], hf = hf.close(), None
    finally:
        for proc, _ in servers.values():
            stop_server(proc)
        if hf is not None:
            hf.proc.kill()
    if "now" in systems:  # shared system prompt: a server whose context holds 512 tokens + question + answer
        proc, url = start_server(model_dir, 16, SYSTEM_TOKENS + 128, args.now, os.path.join(work, "prefix.log"))
        try:
            prefix = prefix_test(url, vocab, max(args.rounds, 3), args.prefix_requests, 8)
        finally:
            stop_server(proc)

    # -- the table --
    names = {"now": f"pdx now ({now_rev}, paged+prefix, HTTP)", "before": f"pdx before ({BEFORE_COMMIT}, slots, HTTP)",
             "hf": f"transformers generate (torch {args.torch_threads} thread(s), in-process batch)"}
    print(f"\nmodel: LLaMA hidden {config.hidden_size}, {config.num_hidden_layers} layers, "
          f"{config.num_attention_heads} heads ({config.num_key_value_heads} kv), vocab {config.vocab_size}, random "
          f"weights; servers --max-slots {top} --max-len {args.max_len}; prompts 16-112 tokens, greedy; "
          f"{args.rounds} timed round(s) per level (median); 1 stream = {args.serial} requests one at a time; "
          f"{time.time() - t_start:.0f} s")
    print(f"XLA compiles during the timed rounds (after warm-up): {late}")
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
        for c, (shared, fresh) in prefix.items():
            r = fresh / shared
            goals.append((f"TTFT p50, {c} request(s) at a time: fresh 512-token prefix {fresh:.1f} ms vs shared "
                          f"(cached) {shared:.1f} ms", f"{r:.2f}x", ">= 3x" if c == 1 else "(no goal)",
                          r >= 3 if c == 1 else None))
    if "now" in results and "hf" in results:
        r = results["now"][top]["tps"] / results["hf"][top]["tps"]
        goals.append((f"{top} streams, pdx now vs transformers generate (no goal)", f"{r:.2f}x", "-", None))
    print("\n| goal | measured | target | |\n|---|--:|--:|---|")
    for what, got, target, ok in goals:
        print(f"| {what} | {got} | {target} | {'' if ok is None else 'PASS' if ok else 'MISS'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
