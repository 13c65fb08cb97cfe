"""Compile time of a llama training step vs depth: a Python loop over layers vs one lax.scan.

    python benchmarks/llama_compile.py [--layers 4 32] [--repeats 3]

Each cell: median (and min) over repeats of trace + lower + compile of
(forward, backward, AdamW update) for a tiny-width llama (hidden 64) on one
CPU device; the width hardly matters for compile time, the depth does.
"scan" is `scan_layers=True`: the layers stored as one `pdx.nn.LayerStack`
(one (L, ...) array per parameter, one lax.scan), so the program is the same
at any depth. The repeats go round all cells in turn, so a busy machine
slows every cell alike; the program size (lines of StableHLO) is printed as
a load-independent measure.
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp

import pdx
import pdx.nn.functional as F
from pdx.models.llama import LlamaConfig, LlamaForCausalLM


def compile_seconds(layers: int, scan: bool) -> tuple[float, int]:
    cfg = LlamaConfig.from_preset("tiny", num_hidden_layers=layers, scan_layers=scan)
    model = LlamaForCausalLM(cfg)
    opt = pdx.optimizer.AdamW(learning_rate=1e-3, parameters=model)

    @pdx.jit
    def step(model, opt, batch):
        def loss_fn(m):
            logits = m(batch[:, :-1])
            return F.cross_entropy(logits.reshape([-1, logits.shape[-1]]), batch[:, 1:].reshape([-1]))

        loss, grads = pdx.value_and_grad(loss_fn)(model)
        opt.step(grads)
        return loss

    batch = jnp.zeros((4, 33), jnp.int32)
    start = time.perf_counter()
    lowered = step.lower(model, opt, batch)
    lowered.compile()
    return time.perf_counter() - start, lowered.as_text().count("\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, nargs="+", default=[4, 32])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cells = [(scan, n) for scan in (False, True) for n in args.layers]
    times, lines = {cell: [] for cell in cells}, {}
    for _ in range(args.repeats):
        for cell in cells:
            seconds, lines[cell] = compile_seconds(cell[1], cell[0])
            times[cell].append(seconds)
    rows = {cell: statistics.median(t) for cell, t in times.items()}
    print(f"device: {jax.devices()[0].device_kind}, median (min) of {args.repeats}")
    print("| layers | loop compile (s) | scan compile (s) | loop HLO lines | scan HLO lines |")
    print("|---|---|---|---|---|")
    for n in args.layers:
        print(f"| {n} | {rows[(False, n)]:.2f} ({min(times[(False, n)]):.2f}) | "
              f"{rows[(True, n)]:.2f} ({min(times[(True, n)]):.2f}) | {lines[(False, n)]} | {lines[(True, n)]} |")
    lo, hi = min(args.layers), max(args.layers)
    print(f"\n{hi} vs {lo} layers: loop x{rows[(False, hi)] / rows[(False, lo)]:.2f}, "
          f"scan x{rows[(True, hi)] / rows[(True, lo)]:.2f} (goal with scan: <= 1.5)")


if __name__ == "__main__":
    main()
