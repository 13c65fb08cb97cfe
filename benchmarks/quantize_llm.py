"""Weight-only quantization of LLaMA: held-out perplexity and parameter memory, bf16 vs int8 vs int4.

A tiny LLaMA is trained for `--steps` on the bytes of Python's bundled
documentation (pydoc_data.topics), then the same weights are evaluated as
float32, bfloat16 (weights rounded), weight-only int8 (per channel) and int4
(group-wise) from `pdx.quantization.weight_only_quantize`. Memory counts the
Linear weights (the part quantized) and the whole model.

    python benchmarks/quantize_llm.py [--steps 300] [--group-size 16]
"""

from __future__ import annotations

import argparse
import copy
import datetime
import math
import platform

import jax
import jax.numpy as jnp
import numpy as np

import pdx
from pdx.models.llama import LlamaForCausalLM, generate
from pdx.quantization import weight_only_quantize


def corpus(seq_len: int):
    from pydoc_data.topics import topics

    data = np.frombuffer("\n".join(topics.values()).encode("utf-8"), np.uint8).astype(np.int32)
    n = len(data) // (seq_len + 1)
    rows = data[: n * (seq_len + 1)].reshape(n, seq_len + 1)
    split = int(n * 0.95)
    return rows[:split], rows[split:]


def train(model, rows, steps, batch, lr, seed):
    opt = pdx.optimizer.AdamW(learning_rate=lr, parameters=model.parameters(), weight_decay=0.01)

    @pdx.jit
    def step(model, opt, x):
        loss, grads = pdx.value_and_grad(lambda m, t: m.loss(t[:, :-1], t[:, 1:]))(model, x)
        opt.step(grads)
        return loss

    rng = np.random.RandomState(seed)
    for i in range(steps):
        loss = step(model, opt, jnp.asarray(rows[rng.randint(0, len(rows), batch)]))
    return float(loss)


def perplexity(model, rows, batch=32):
    run = pdx.jit(lambda m, t: m.loss(t[:, :-1], t[:, 1:]))
    losses = [float(run(model, jnp.asarray(rows[i:i + batch]))) for i in range(0, len(rows) - batch + 1, batch)]
    return math.exp(float(np.mean(losses)))


def nbytes(model, linear_only):
    total = 0
    for name, v in [*model.named_parameters(), *model.named_buffers()]:
        if not linear_only or "proj" in name:
            total += v.get_value().nbytes
    return total


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--group-size", type=int, default=16)  # divides the tiny preset's 64 and 176 input rows
    args = p.parse_args(argv)
    train_rows, held_out = corpus(args.seq_len)
    pdx.seed(0)
    model = LlamaForCausalLM("tiny")
    last = train(model, train_rows, args.steps, args.batch, 3e-3, 0)
    bf16 = copy.deepcopy(model)
    for p_ in bf16.parameters():
        p_.set_value(p_.get_value().astype(jnp.bfloat16).astype(jnp.float32))
    variants = {
        "float32": model,
        "bfloat16 weights": bf16,
        "int8 weight-only": weight_only_quantize(copy.deepcopy(model), "weight_only_int8"),
        f"int4 weight-only g{args.group_size}": weight_only_quantize(copy.deepcopy(model), "weight_only_int4",
                                                                     group_size=args.group_size),
    }
    prompt = jnp.asarray(held_out[:4, :16])
    ref_tokens = np.asarray(generate(model, prompt, 16))[:, 16:]
    base = perplexity(bf16, held_out)
    print(f"LLaMA tiny after {args.steps} steps (last train loss {last:.3f}), {len(held_out)} held-out rows of "
          f"{args.seq_len} bytes. {datetime.date.today()}, {platform.machine()}, jax {jax.__version__}\n")
    print("| weights | held-out ppl | vs bf16 | Linear weight bytes | vs bf16 | model bytes | "
          "greedy tokens = fp32 (first 16) |\n|---|---:|---:|---:|---:|---:|---:|")
    bf16_linear = nbytes(model, True) // 2
    for name, m in variants.items():
        ppl = perplexity(m, held_out)
        linear = bf16_linear if name.startswith("bfloat16") else nbytes(m, True)
        same = float(np.mean(np.asarray(generate(m, prompt, 16))[:, 16:] == ref_tokens))
        print(f"| {name} | {ppl:.4f} | {ppl / base - 1:+.2%} | {linear} | {bf16_linear / linear:.2f}x | "
              f"{nbytes(m, False) // (2 if name.startswith('bfloat16') else 1)} | {same:.0%} |")


if __name__ == "__main__":
    main()
