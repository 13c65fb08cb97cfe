"""Where a ResNet-18 training step spends its time: XLA:CPU vs PyTorch, per op.

The CIFAR ResNet-18 of `train_step.py` (batch 32, 32x32) has 20 convolutions of
7 distinct shapes and 20 BatchNorms. For each distinct convolution this times,
in XLA (NHWC, pdx's defaults) and in PyTorch eager (NCHW, oneDNN):

  fwd       y = conv(x, w)
  dgrad     dx = conv_transpose(dy, w)      (the input gradient)
  wgrad     dw = correlate(x, dy)           (the weight gradient)

plus BatchNorm forward + backward at each activation size, and sums them with
each shape's multiplicity in the network: the rows say which part of the step
is slower than PyTorch's, and by how much.

Usage:
  python benchmarks/resnet_profile.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

# (cin, cout, kernel, stride, input size, count in ResNet-18 CIFAR)
CONVS = [
    (3, 64, 3, 1, 32, 1),
    (64, 64, 3, 1, 32, 4),
    (64, 128, 3, 2, 32, 1), (128, 128, 3, 1, 16, 3), (64, 128, 1, 2, 32, 1),
    (128, 256, 3, 2, 16, 1), (256, 256, 3, 1, 8, 3), (128, 256, 1, 2, 16, 1),
    (256, 512, 3, 2, 8, 1), (512, 512, 3, 1, 4, 3), (256, 512, 1, 2, 8, 1),
]
# (channels, size, count): BatchNorm after each convolution
NORMS = [(64, 32, 5), (128, 16, 5), (256, 8, 5), (512, 4, 5)]
BATCH = 32


def _median_ms(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def xla_rows(repeats: int) -> dict:
    import jax
    import jax.numpy as jnp

    import pdx  # noqa: F401  (pdx's XLA:CPU defaults)
    from pdx.nn import functional as F

    rows = {}
    for cin, cout, k, s, size, _ in CONVS:
        x = jax.random.normal(jax.random.key(0), (BATCH, size, size, cin))
        w = jax.random.normal(jax.random.key(1), (cout, cin, k, k)) * 0.05

        def conv(x, w, s=s, k=k):
            return F.conv2d(x, w, stride=s, padding=k // 2, data_format="NHWC")

        y, vjp = jax.vjp(conv, x, w)
        dy = jnp.ones_like(y)
        fwd = jax.jit(conv)
        dgrad = jax.jit(lambda x, w, dy: jax.vjp(lambda x: conv(x, w), x)[1](dy)[0])
        wgrad = jax.jit(lambda x, w, dy: jax.vjp(lambda w: conv(x, w), w)[1](dy)[0])
        rows[cin, cout, k, s, size] = {
            "fwd": _median_ms(lambda: fwd(x, w).block_until_ready(), repeats),
            "dgrad": _median_ms(lambda: dgrad(x, w, dy).block_until_ready(), repeats),
            "wgrad": _median_ms(lambda: wgrad(x, w, dy).block_until_ready(), repeats),
        }
    for c, size, _ in NORMS:
        x = jax.random.normal(jax.random.key(0), (BATCH, size, size, c))
        g, b = jnp.ones(c), jnp.zeros(c)

        def loss(x, g, b):
            out, _, _ = F.batch_norm_with_stats(x, jnp.zeros(c), jnp.ones(c), g, b, training=True,
                                                data_format="NHWC")
            return jnp.sum(out * x)

        step = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))
        rows["bn", c, size] = {"fwd+bwd": _median_ms(lambda: jax.block_until_ready(step(x, g, b)), repeats)}
    return rows


def torch_rows(repeats: int) -> dict:
    import torch
    from torch.nn import functional as F

    torch.set_num_threads(os.cpu_count() or 1)
    rows = {}
    for cin, cout, k, s, size, _ in CONVS:
        x = torch.randn(BATCH, cin, size, size)
        w = torch.randn(cout, cin, k, k) * 0.05
        y = F.conv2d(x, w, stride=s, padding=k // 2)
        dy = torch.ones_like(y)
        with torch.no_grad():
            rows[cin, cout, k, s, size] = {
                "fwd": _median_ms(lambda: F.conv2d(x, w, stride=s, padding=k // 2), repeats),
                "dgrad": _median_ms(lambda: torch.nn.grad.conv2d_input(x.shape, w, dy, stride=s, padding=k // 2),
                                    repeats),
                "wgrad": _median_ms(lambda: torch.nn.grad.conv2d_weight(x, w.shape, dy, stride=s, padding=k // 2),
                                    repeats),
            }
    for c, size, _ in NORMS:
        x = torch.randn(BATCH, c, size, size, requires_grad=True)
        bn = torch.nn.BatchNorm2d(c).train()

        def step():
            out = bn(x)
            (out * x).sum().backward()

        rows["bn", c, size] = {"fwd+bwd": _median_ms(step, repeats)}
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args()
    print(f"resnet_profile.py (load average at start: {os.getloadavg()[0]:.2f})\n")
    ours, theirs = xla_rows(args.repeats), torch_rows(args.repeats)
    counts = {(ci, co, k, s, n): m for ci, co, k, s, n, m in CONVS} | {("bn", c, n): m for c, n, m in NORMS}
    print("| op | shape (cin->cout, k, stride, size) | x in step | XLA ms | torch ms | XLA / torch |")
    print("|---|---|---:|---:|---:|---:|")
    totals: dict[str, list[float]] = {}
    for key, parts in ours.items():
        for part, ms in parts.items():
            t = theirs[key][part]
            label = f"bn {key[1]}ch {key[2]}px" if key[0] == "bn" else (
                f"{key[0]}->{key[1]}, {key[2]}x{key[2]}, s{key[3]}, {key[4]}px")
            print(f"| {part} | {label} | {counts[key]} | {ms:.2f} | {t:.2f} | {ms / t:.2f} |")
            acc = totals.setdefault(part, [0.0, 0.0])
            acc[0] += counts[key] * ms
            acc[1] += counts[key] * t
    print("\n| part | XLA ms per step | torch ms per step | XLA / torch |\n|---|---:|---:|---:|")
    for part, (a, b) in totals.items():
        print(f"| {part} | {a:.1f} | {b:.1f} | {a / b:.2f} |")
    a, b = (sum(v[i] for v in totals.values()) for i in (0, 1))
    print(f"| all | {a:.1f} | {b:.1f} | {a / b:.2f} |")
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}; numpy {np.__version__}")


if __name__ == "__main__":
    main()
