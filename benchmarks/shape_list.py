"""What Paddle-style `x.shape` costs: JAX's tuple vs pdx's `Shape`, a tuple subclass that takes lists.

Paddle's `x.shape` is a list (`paddle.Size`, a list subclass): ported code writes
`x.shape[:-1] + [h, d]`, `x.shape == [3]` and `s = x.shape; s[0] = -1`. JAX's is a
tuple, and JAX code hashes shapes. pdx's `Shape` (pdx/_tensor.py) keeps hashing: a
tuple subclass whose `+` and `==` accept lists, one object per distinct shape (it cannot
give `s[0] = -1`: a list subclass would be unhashable, which breaks `jax.jit` static
arguments and every shape-keyed cache).

Each side runs in its own fresh process (`wrapped`: pdx as shipped; `plain`: JAX's own
`shape` property put back on its array and tracer types), timing process CPU:

  access      `x.shape` on a concrete array (ns per read)
  eager loop  an op-by-op loop of pdx ops that reads shapes (reshape / matmul / softmax /
              layer_norm on a 16x64 array, us per iteration)
  trace       `jax.make_jaxpr` of a 4-block pdx transformer forward and backward
              (ms per trace: the pdx.jit trace cost, no XLA compile)
  first step  the same step traced, lowered and compiled by XLA (ms: what a user waits for)

  python benchmarks/shape_list.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def _restore_jax_shape():
    """The `plain` side: JAX's own `shape` property back on its array and tracer types."""
    from pdx import _tensor

    for cls in _tensor._array_classes():
        cls.shape = _tensor._JAX_ORIGINAL[(cls, "shape")]


def _best(fn, n, repeats=5):
    best = float("inf")
    for _ in range(repeats):
        t = time.process_time()
        for _ in range(n):
            fn()
        best = min(best, (time.process_time() - t) / n)
    return best


def _worker(wrapped: bool) -> dict[str, float]:
    import jax
    import jax.numpy as jnp

    import pdx
    import pdx.nn.functional as F

    if wrapped:
        assert jnp.ones((2, 3)).shape[:-1] + [4] == [2, 4]
    else:
        _restore_jax_shape()
        assert type(jnp.ones((2, 3)).shape) is tuple
    x = jnp.ones((16, 64))
    w = jnp.ones((64, 64)) * 0.01
    out = {"access": _best(lambda: x.shape, 200_000) * 1e9}

    def eager_step():
        h = pdx.reshape(x, [x.shape[0], 4, x.shape[1] // 4])
        h = pdx.reshape(h, [h.shape[0], -1])
        h = F.softmax(pdx.matmul(h, w), axis=-1)
        return F.layer_norm(h, h.shape[-1:])

    eager_step()
    out["eager loop"] = _best(eager_step, 300) * 1e6

    pdx.seed(0)

    class Block(pdx.nn.Layer):
        def __init__(self):
            super().__init__()
            self.attn = pdx.nn.MultiHeadAttention(64, 4)
            self.ln1, self.ln2 = pdx.nn.LayerNorm(64), pdx.nn.LayerNorm(64)
            self.fc1, self.fc2 = pdx.nn.Linear(64, 256), pdx.nn.Linear(256, 64)

        def forward(self, h):
            h = h + self.attn(self.ln1(h))
            return h + self.fc2(F.gelu(self.fc1(self.ln2(h))))

    model = pdx.nn.Sequential(*[Block() for _ in range(4)])
    tokens = jnp.ones((2, 16, 64))

    def loss(m, t):
        return (m(t) ** 2).mean()

    def trace():
        jax.make_jaxpr(lambda t: pdx.value_and_grad(loss)(model, t))(tokens)

    trace()
    out["trace"] = _best(trace, 3, repeats=3) * 1e3

    def first_step():  # what a user waits for: trace, lower and compile the training step
        jax.clear_caches()
        jax.jit(lambda t: pdx.value_and_grad(loss)(model, t)).lower(tokens).compile()

    out["first step"] = _best(first_step, 1, repeats=3) * 1e3
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--worker", choices=["plain", "wrapped"])
    a = p.parse_args()
    if a.worker:
        print(json.dumps(_worker(a.worker == "wrapped")))
        return
    results = {"plain": [], "wrapped": []}
    for r in range(a.rounds):
        for side in (("plain", "wrapped") if r % 2 == 0 else ("wrapped", "plain")):
            proc = subprocess.run([sys.executable, __file__, "--worker", side], capture_output=True, text=True,
                                  check=True)
            results[side].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    print("| case | plain | tuple subclass | subclass / plain |")
    print("|---|---:|---:|---:|")
    for key, unit in (("access", "ns"), ("eager loop", "us"), ("trace", "ms"), ("first step", "ms")):
        a_, b_ = (statistics.median(r[key] for r in results[s]) for s in ("plain", "wrapped"))
        print(f"| {key} ({unit}) | {a_:.2f} | {b_:.2f} | {b_ / a_:.2f} |")


if __name__ == "__main__":
    main()
