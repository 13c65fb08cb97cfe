"""Cost of pdx.jit's control-flow conversion over the test corpus.

For each corpus function (tests/jit/test_dy2static_corpus.py):
  convert ms  - source -> AST rewrite -> code object, for the function and the
                helpers/Layers it calls (cold caches; what the first call pays
                on top of tracing)
  first ms    - the whole first call: convert + trace + lower + XLA compile
  ratio       - convert / first
Then the steady state: per-call time of pdx.jit on converted code against
pdx.jit (and plain jax.jit) on the same computation written by hand with
lax.cond / lax.scan / lax.while_loop (medians over interleaved rounds).

    python benchmarks/dy2static.py            # ~1-2 min on a 2-core CPU
    python benchmarks/dy2static.py --calls 2000
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import jax
import jax.numpy as jnp
from jax import lax

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "jit"))

import pdx  # noqa: E402
from pdx.jit._dy2static import _convert  # noqa: E402
import test_dy2static_corpus as corpus  # noqa: E402


def _timed_build():
    total = [0.0]
    real = _convert._build

    def build(fn):
        t0 = time.perf_counter()
        try:
            return real(fn)
        finally:
            total[0] += time.perf_counter() - t0

    _convert._build = build
    return total, lambda: setattr(_convert, "_build", real)


def first_calls():
    rows = []
    entries = [(f.__name__, lambda f=f: pdx.jit(f), inputs) for f, inputs in corpus.CORPUS]
    entries += [(c.__name__, lambda c=c: pdx.jit(corpus._make_layer(c)), inputs) for c, inputs in corpus.LAYERS]
    for name, make, inputs in entries:
        _convert._reset_caches()
        jax.clear_caches()
        compiled = make()
        total, restore = _timed_build()
        try:
            t0 = time.perf_counter()
            jax.block_until_ready(compiled(*inputs[0]))
            first = time.perf_counter() - t0
        finally:
            restore()
        rows.append((name, total[0] * 1e3, first * 1e3))
    return rows


# -- steady state: converted code vs hand-written lax ------------------------------------

def hand_if(x):
    return lax.cond(x.sum() > 0, lambda: x * 2, lambda: -x)


def hand_scan(x):
    def step(acc, row):
        return acc + row ** 2, None
    return lax.scan(step, jnp.zeros(x.shape[1:], x.dtype), x)[0]


def hand_while(x):
    def cond(c):
        return c[0].sum() > 1

    def body(c):
        return c[0] / 2, c[1] + 1
    return lax.while_loop(cond, body, (x, 0))


PAIRS = [
    ("if_else_sign", corpus.if_else_sign, hand_if, (jnp.ones(8),)),
    ("for_over_rows", corpus.for_over_rows, hand_scan, (jnp.ones((16, 8)),)),
    ("while_halving", corpus.while_halving, hand_while, (jnp.ones(8),)),
]


def steady(calls: int, rounds: int):
    """Median us per call: pdx.jit on converted code, pdx.jit on the hand-written
    lax version (the conversion's own per-call cost is the difference), and
    jax.jit on the hand-written version (pdx.jit's boundary, for reference)."""
    rows = []
    for name, fn, hand, args in PAIRS:
        fns = {"converted": pdx.jit(fn), "hand": pdx.jit(hand), "jax": jax.jit(hand)}
        for f in fns.values():
            jax.block_until_ready(f(*args))
        times = {k: [] for k in fns}
        for r in range(rounds):
            order = list(fns.items())[:: 1 if r % 2 == 0 else -1]
            for key, f in order:
                t0 = time.perf_counter()
                for _ in range(calls):
                    out = f(*args)
                jax.block_until_ready(out)
                times[key].append((time.perf_counter() - t0) / calls * 1e6)
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append((name, med["converted"], med["hand"], med["jax"]))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500, help="calls per timing round")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (median)")
    args = parser.parse_args()

    rows = first_calls()
    print(f"{'function':<24}{'convert ms':>12}{'first call ms':>15}{'ratio':>8}")
    for name, conv, first in rows:
        print(f"{name:<24}{conv:>12.2f}{first:>15.1f}{conv / first:>8.1%}")
    conv_total = sum(r[1] for r in rows)
    first_total = sum(r[2] for r in rows)
    ratios = [r[1] / r[2] for r in rows]
    print(f"{'total (' + str(len(rows)) + ' fns)':<24}{conv_total:>12.1f}{first_total:>15.1f}"
          f"{conv_total / first_total:>8.1%}   median ratio {statistics.median(ratios):.1%}, "
          f"max {max(ratios):.1%}")

    print()
    print(f"{'steady state (us/call)':<24}{'pdx.jit conv':>14}{'pdx.jit lax':>13}{'conv/lax':>10}"
          f"{'jax.jit lax':>13}")
    for name, conv, hand, raw in steady(args.calls, args.rounds):
        print(f"{name:<24}{conv:>14.1f}{hand:>13.1f}{conv / hand:>10.2f}{raw:>13.1f}")


if __name__ == "__main__":
    main()
