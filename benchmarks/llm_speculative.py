"""Speculative decoding in LLMEngine: tokens/s with and without it, acceptance rate, exactness.

    python benchmarks/llm_speculative.py [--hidden 512] [--layers 8] [--max-tokens 64] [--rounds 3]

One target model (random weights, a BPE tokenizer trained on the bundled
corpus) served in-process by LLMEngine three ways: plain decoding, prompt
lookup ("ngram", k=4; "ngram <4": only while fewer than 4 sequences
decode, `disable_by_batch_size=4`) and a draft model (k=3): one layer of half the
width. Both models are first trained briefly (`--train-steps`) on the
corpus, so the draft has something to agree with the target on.
Prompts are of two kinds: "copy" (a passage repeated, the shape of
extraction / editing / code tasks where the answer quotes the prompt) and
"plain" (corpus text). Each setting runs every prompt greedily at 1 and at 8
concurrent streams; the table shows generated tokens/s (median over rounds),
the speed-up over plain decoding, the acceptance rate, tokens per target
call, and whether every output equals plain decoding's (it must).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import numpy as np

from pdx import text
from pdx.models.llama import LlamaConfig, LlamaForCausalLM, LLMEngine, SamplingParams, SpeculativeConfig


def train(model, ids, steps: int, seed: int) -> float:
    """A few hundred AdamW steps of next-token prediction on the corpus; the last loss."""
    import jax
    import jax.numpy as jnp
    import optax
    from flax import nnx

    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    opt = optax.adamw(3e-3)
    opt_state = opt.init(params)

    @jax.jit
    def step(params, opt_state, x):
        def loss(p):
            logits = nnx.merge(graphdef, p, rest)(x[:, :-1]).astype(jnp.float32)
            return optax.softmax_cross_entropy_with_integer_labels(logits, x[:, 1:]).mean()
        value, grads = jax.value_and_grad(loss)(params)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    rng = np.random.default_rng(seed)
    for _ in range(steps):
        starts = rng.integers(0, len(ids) - 65, 16)
        params, opt_state, value = step(params, opt_state, np.stack([ids[s:s + 65] for s in starts]))
    nnx.update(model, params)
    return float(value)


def build(hidden: int, layers: int, max_len: int, steps: int):
    """Tokenizer, target and a 1-layer draft of half the width, both trained on the bundled corpus."""
    tok = text.train_bpe(text.bundled_corpus()[:60], vocab_size=512)
    ids = np.concatenate([np.asarray(tok.encode(d), np.int32) for d in text.bundled_corpus()])

    def model(width, depth, seed):
        config = LlamaConfig.from_preset("tiny", vocab_size=512, hidden_size=width, intermediate_size=width * 3,
                                         num_hidden_layers=depth, num_attention_heads=max(width // 64, 2),
                                         num_key_value_heads=max(width // 128, 1), max_position_embeddings=max_len)
        return LlamaForCausalLM(config, rngs=seed)
    target, draft = model(hidden, layers, 0), model(hidden // 2, 1, 1)
    losses = (train(target, ids, steps, 0), train(draft, ids, steps, 1)) if steps else (float("nan"),) * 2
    return tok, target, draft, losses


def prompts(tok, kind: str, n: int):
    docs = text.bundled_corpus()
    out = []
    for i in range(n):
        words = docs[(i * 11) % len(docs)].split()
        if kind == "copy":
            passage = " ".join(words[:25])
            out.append(tok.encode(f"{passage}\n{passage}\n{passage}")[:150])
        else:
            out.append(tok.encode(" ".join(words[:40]))[:150])
    return out


def run(engine, batch, max_tokens):
    """Submit every prompt at once; (outputs, seconds, generated tokens)."""
    done, results = threading.Semaphore(0), [None] * len(batch)
    params = SamplingParams(max_tokens=max_tokens, temperature=0)
    t0 = time.perf_counter()
    reqs = [engine.submit(p, params, lambda kind, _: done.release() if kind == "done" else None) for p in batch]
    for _ in reqs:
        done.acquire()
    seconds = time.perf_counter() - t0
    for i, r in enumerate(reqs):
        results[i] = r.tokens
    return results, seconds, sum(len(r) for r in results)


def measure(engine, batch, streams, max_tokens, rounds):
    """tokens/s (median over rounds) serving `batch` `streams` at a time; the outputs of the last round."""
    rates, outputs = [], None
    for r in range(rounds + 1):     # the first round compiles this concurrency's shapes and is not counted
        outs, secs, toks = [], 0.0, 0
        for i in range(0, len(batch), streams):
            o, s, t = run(engine, batch[i:i + streams], max_tokens)
            outs += o
            secs += s
            toks += t
        if r:
            rates.append(toks / secs)
        outputs = outs
    return statistics.median(rates), outputs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--train-steps", type=int, default=300, help="training steps of target and draft (0: random)")
    args = ap.parse_args()
    max_len = 256
    tok, target, draft, losses = build(args.hidden, args.layers, max_len, args.train_steps)
    settings = {"plain": None, "ngram k=4": SpeculativeConfig("ngram", 4),
                "ngram <4": SpeculativeConfig("ngram", 4, disable_by_batch_size=4),
                "draft k=3": SpeculativeConfig("draft", 3, draft_model=draft)}
    print(f"target: hidden {args.hidden}, {args.layers} layers (loss {losses[0]:.2f}); draft: hidden "
          f"{args.hidden // 2}, 1 layer (loss {losses[1]:.2f}); {args.train_steps} training steps each; "
          f"{args.prompts} prompts x {args.max_tokens} tokens, greedy, median of {args.rounds} rounds")
    print(f"{'prompts':<7} {'streams':>7} {'setting':<10} {'tok/s':>8} {'speed-up':>8} {'accept':>7} "
          f"{'tok/call':>8} {'exact':>5}")
    for kind in ("copy", "plain"):
        batch = prompts(tok, kind, args.prompts)
        for streams in (1, 8):
            base_rate, base_out = None, None
            for name, spec in settings.items():
                engine = LLMEngine(target, tok, max_slots=8, max_len=max_len, block_size=16, speculative=spec)
                try:
                    rate, out = measure(engine, batch, streams, args.max_tokens, args.rounds)
                    stats = engine.spec_stats()
                finally:
                    engine.close()
                if spec is None:
                    base_rate, base_out = rate, out
                    accept, per_call = "-", "1.00"
                else:
                    accept, per_call = f"{stats['acceptance_rate']:.2f}", f"{stats['tokens_per_step']:.2f}"
                print(f"{kind:<7} {streams:>7} {name:<10} {rate:>8.1f} {rate / base_rate:>7.2f}x {accept:>7} "
                      f"{per_call:>8} {str(out == base_out):>5}", flush=True)
    print(f"(numpy {np.__version__})")


if __name__ == "__main__":
    main()
