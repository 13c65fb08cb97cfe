"""What `pdx.Model` costs on top of a hand-written compiled step (GPT-mini).

Runs the GPT-mini of `benchmarks/train_step.py` (4 pre-LN decoder layers,
d_model 256, seq 128, batch 8, AdamW) three ways, with identical initial
weights and the same device-resident batch:

  pdx.jit     the step a user writes: `@pdx.jit` over
              `pdx.value_and_grad(loss)(model, x, y)` + `opt.step(grads)`,
              one `float(loss)` per step
  Model.fit   `pdx.Model(net).prepare(AdamW, loss).fit(batches, verbose=0)`:
              the TrainState step (NaN/Inf guard, loss scale, metrics plumbing),
              callbacks, one host read of the step's results per step
  train_batch `Model.train_batch([x], [y])` in a Python loop

Rounds are interleaved (one round of each, repeated) and the table shows the
median ms/step and the ratio to pdx.jit. Goal: Model.fit <= 1.05x pdx.jit.

  python benchmarks/fit_overhead.py [--steps 10] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

import jax
import jax.numpy as jnp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import train_step as ts  # noqa: E402  (the GPT-mini definition shared with train_step.py)

TARGET = 1.05


def _gpt(cfg):
    import pdx

    pdx.seed(0)
    model = ts._pdx_models(cfg, ts.ResNetConfig(), "NCHW")[0]()
    opt = pdx.optimizer.AdamW(learning_rate=cfg.lr, parameters=model.parameters(), weight_decay=cfg.weight_decay)
    return model, opt


def cases(cfg, steps: int) -> dict:
    import pdx
    import pdx.nn.functional as F

    x, y = (jnp.asarray(a, jnp.int32) for a in ts.gpt_batch(cfg))

    model, opt = _gpt(cfg)
    hand_step, _ = ts._pdx_step(model, opt, x, y, donate=True)

    def hand():
        for _ in range(steps):
            hand_step()

    def lm_loss(logits, labels):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))

    def hapi_model():
        net, hopt = _gpt(cfg)
        m = pdx.Model(net)
        m.prepare(hopt, lm_loss)
        return m

    fit_model, loop_model = hapi_model(), hapi_model()
    batches = [(x, y)] * steps

    def fit():
        fit_model.fit(batches, epochs=1, verbose=0)

    def train_batch():
        for _ in range(steps):
            loop_model.train_batch([x], [y])

    return {"pdx.jit": hand, "Model.fit": fit, "train_batch": train_batch}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="steps per timed round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per case")
    args = parser.parse_args()
    cfg = ts.GPTConfig()
    runs = cases(cfg, args.steps)
    for run in runs.values():  # compile and warm up
        run()
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.rounds):
        for name, run in runs.items():
            ts.settle()
            start = time.perf_counter()
            run()
            times[name].append((time.perf_counter() - start) * 1e3 / args.steps)
    base = statistics.median(times["pdx.jit"])
    print(f"GPT-mini train step, {args.steps} steps x {args.rounds} interleaved rounds, "
          f"jax {jax.__version__}, {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
          f"{jax.devices()[0].platform}")
    print(f"{'case':<14}{'ms/step (median)':>18}{'min':>10}{'max':>10}{'vs pdx.jit':>12}")
    for name, t in times.items():
        med = statistics.median(t)
        print(f"{name:<14}{med:>18.2f}{min(t):>10.2f}{max(t):>10.2f}{med / base:>11.3f}x")
    ratio = statistics.median(times["Model.fit"]) / base
    print(f"Model.fit / pdx.jit = {ratio:.3f}x (goal <= {TARGET}x): {'met' if ratio <= TARGET else 'NOT met'}")


if __name__ == "__main__":
    main()
