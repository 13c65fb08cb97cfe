"""LLM serving throughput: continuous batching (32 slots) vs one request at a time (1 slot), over HTTP.

    python benchmarks/llm_serve.py [--concurrency 32] [--max-tokens 64] [--rounds 3] [--preset tiny]

Two real `pdx serve --llm` processes on loopback serve the same model (random
weights, a byte-level tokenizer); each round sends `concurrency` requests
at once (greedy, `max_tokens` each, prompts of different lengths) to one
server, then the other. Prints generated tokens/s per server (median over
rounds), the ratio, and time to first token.
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
import time


def start(model_dir: str, slots: int, max_len: int):
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=1")
    proc = subprocess.Popen([sys.executable, "-m", "pdx.cli", "serve", "--llm", model_dir, "--port", "0",
                             "--max-slots", str(slots), "--max-len", str(max_len), "--max-queue", "4096",
                             "--log-level", "warning"], stdout=subprocess.PIPE, text=True, env=env)
    url = "http://127.0.0.1:" + re.search(r":(\d+)$", proc.stdout.readline().strip()).group(1)
    import httpx

    for _ in range(600):
        try:
            if httpx.get(url + "/health/ready", timeout=5).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("server did not start")


async def round_trip(url: str, prompts: list[str], max_tokens: int):
    import httpx

    first: list[float] = []

    async def one(client, prompt):
        t0 = time.perf_counter()
        tokens = 0
        async with client.stream("POST", url + "/v1/completions",
                                 json={"prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                                       "stream": True}) as r:
            if r.status_code != 200:
                raise RuntimeError(f"request failed: {r.status_code} {(await r.aread())[:200]!r}")
            async for line in r.aiter_lines():
                if line.startswith("data: {"):
                    chunk = json.loads(line[6:])
                    if tokens == 0 and chunk["choices"][0]["text"]:
                        first.append(time.perf_counter() - t0)
                        tokens = -1
                    if "usage" in chunk:
                        tokens = chunk["usage"]["completion_tokens"]
        return tokens

    start = time.perf_counter()
    async with httpx.AsyncClient(timeout=600, limits=httpx.Limits(max_connections=1024)) as client:
        counts = await asyncio.gather(*(one(client, p) for p in prompts))
    elapsed = time.perf_counter() - start
    return sum(counts), elapsed, statistics.median(first)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--preset", default="tiny")
    args = parser.parse_args(argv)

    from pdx import text
    from pdx.models.llama import LlamaConfig, LlamaForCausalLM, save_hf_pretrained

    tok = text.train_bpe(text.bundled_corpus()[:20], vocab_size=260, special_tokens=("<unk>", "<s>", "</s>", "<pad>"))
    directory = os.path.join(tempfile.mkdtemp(), "model")
    config = LlamaConfig.from_preset(args.preset, vocab_size=tok.vocab_size, max_position_embeddings=256)
    save_hf_pretrained(LlamaForCausalLM(config, rngs=0), directory, tokenizer=tok)
    words = " ".join(text.bundled_corpus()[50].split())
    prompts = [words[: 20 + 3 * i] for i in range(args.concurrency)]  # + max_tokens fits max_len
    # eos never ends a request early: the random model rarely emits it, and every request counts its own tokens
    servers = {"continuous batching (32 slots)": start(directory, 32, 256),
               "one at a time (1 slot)": start(directory, 1, 256)}
    results = {name: [] for name in servers}
    try:
        for _, url in servers.values():  # warm-up: compile prefill buckets and the decode step
            asyncio.run(round_trip(url, prompts[:4], 4))
        for _ in range(args.rounds):
            for name, (_, url) in servers.items():
                results[name].append(asyncio.run(round_trip(url, prompts, args.max_tokens)))
    finally:
        for proc, _ in servers.values():
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    print(f"{args.concurrency} concurrent streaming requests x {args.max_tokens} tokens, preset {args.preset}, "
          f"{args.rounds} rounds (median)")
    print("| server | tokens/s | wall s | median time to first token s |")
    print("|---|---:|---:|---:|")
    rates = {}
    for name, rows in results.items():
        rate = statistics.median(t / e for t, e, _ in rows)
        rates[name] = rate
        print(f"| {name} | {rate:.1f} | {statistics.median(e for _, e, _ in rows):.2f} | "
              f"{statistics.median(f for _, _, f in rows):.3f} |")
    names = list(rates)
    print(f"throughput ratio: {rates[names[0]] / rates[names[1]]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
