"""pdx.kernels against their peers: attention TFLOP/s, cross-entropy time and memory, norm bandwidth.

Sections (each prints one table, medians over --repeats timed calls after a
warm-up call that also compiles):

  attention  B x H x S x D = 4 x 16 x {1024..16384} x {64, 128}, causal and
             not, bf16: forward and forward+backward TFLOP/s of the pdx Pallas
             kernel, cuDNN (jax.nn.dot_product_attention(implementation=
             "cudnn")), the XLA reference (implementation="xla") and tokamax
             (if installed). FLOPs: forward 4*B*H*S*S*D (halved when causal),
             forward+backward 3.5x that (the FlashAttention convention).
  ce         LM-head cross-entropy: tokens x vocab 128256 from bf16 logits
             (pdx Pallas kernel vs the unfused XLA reference) and from hidden
             states (pdx chunked projection+loss vs unfused logits = h @ W then
             loss): forward and backward ms, and the compiled step's temp
             memory from XLA's memory analysis.
  norms      RMSNorm / LayerNorm over rows x features in bf16, forward and
             forward+backward: GB/s of the pdx kernel and of the XLA reference,
             next to the device's measured copy bandwidth (y = x + 1).

Goals (issue 7): attention fwd+bwd >= 0.9x cuDNN at hd128 causal; norms >= 80%
of copy bandwidth; CE backward >= 1.5x faster than unfused XLA.

Usage:
  python benchmarks/kernels.py                 # full sizes on a GPU
  python benchmarks/kernels.py --smoke         # tiny sizes; on a CPU the Pallas
                                               # rows run in interpret mode (checks
                                               # the script, not the speed)
  python benchmarks/kernels.py --only attention --seq 4096,8192 --head-dims 128
"""

from __future__ import annotations

import argparse
import datetime
import functools
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import pdx.kernels as K


def timed(fn, *args, repeats):
    """Median seconds of fn(*args) (already compiled by one warm-up call)."""
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def attempt(fn):
    """Run a measurement; a failure (OOM, unsupported config, missing library) becomes a short note."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001  (any failure of one peer must not stop the table)
        return f"n/a ({type(e).__name__}: {str(e).splitlines()[0][:60]})"


def fmt(v, spec=".3g"):
    return v if isinstance(v, str) else format(v, spec)


def device_name():
    d = jax.devices()[0]
    return f"{d.platform}:{getattr(d, 'device_kind', '')}"


# --------------------------------------------------------------------------- attention

def attention_impls(causal):
    impls = {
        "pdx": lambda q, k, v: K.flash_attention(q, k, v, causal=causal, impl="pallas"),
        "cudnn": lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=causal, implementation="cudnn"),
        "xla": lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=causal, implementation="xla"),
    }
    try:
        import tokamax
        impls["tokamax"] = lambda q, k, v: tokamax.dot_product_attention(q, k, v, is_causal=causal)
    except ImportError:
        pass
    if jax.default_backend() != "gpu":
        impls.pop("cudnn")
    return impls


def bench_attention(args):
    dtype = jnp.dtype(args.dtype)
    print(f"\n## attention, {dtype}, B={args.batch} H={args.heads}: TFLOP/s, forward / forward+backward")
    header = ["S", "D", "causal"]
    rows = []
    for d in args.head_dims:
        for s in args.seq:
            for causal in (False, True):
                key = jax.random.key(0)
                q, k, v = (jax.random.normal(kk, (args.batch, s, args.heads, d), dtype)
                           for kk in jax.random.split(key, 3))
                flops = 4 * args.batch * args.heads * s * s * d * (0.5 if causal else 1.0)
                row = [str(s), str(d), str(causal)]
                results = {}
                for name, fn in attention_impls(causal).items():
                    fwd = jax.jit(fn)
                    both = jax.jit(jax.grad(lambda q, k, v, fn=fn: jnp.sum(fn(q, k, v).astype(jnp.float32)),
                                            argnums=(0, 1, 2)))
                    t_f = attempt(lambda: flops / timed(fwd, q, k, v, repeats=args.repeats) / 1e12)
                    t_b = attempt(lambda: 3.5 * flops / timed(both, q, k, v, repeats=args.repeats) / 1e12)
                    if name not in header:
                        header.append(name)
                    results[name] = t_b
                    row.append(f"{fmt(t_f)} / {fmt(t_b)}")
                ratio = [results.get(n) for n in ("pdx", "cudnn")]
                if "pdx/cudnn fwd+bwd" not in header:
                    header.append("pdx/cudnn fwd+bwd")
                row.append(f"{ratio[0] / ratio[1]:.2f}" if all(isinstance(r, float) for r in ratio) else "n/a")
                rows.append(row)
                print("  ".join(row), flush=True)
    table(header, rows)


# --------------------------------------------------------------------------- cross-entropy

def temp_mb(fn, *args):
    return jax.jit(fn).lower(*args).compile().memory_analysis().temp_size_in_bytes / 2 ** 20


def backward_ms(loss, inputs, repeats):
    """The backward pass alone: the jitted vjp function applied to a unit cotangent."""
    _, vjp_fn = jax.jit(lambda *a: jax.vjp(loss, *a))(*inputs)
    apply = jax.jit(lambda f, g: f(g))
    return timed(apply, vjp_fn, jnp.ones((), jnp.float32), repeats=repeats) * 1e3


def bench_ce(args):
    t, vocab, hid = args.tokens, args.vocab, args.hidden
    dtype = jnp.dtype(args.dtype)
    print(f"\n## cross-entropy, {dtype}, tokens={t} vocab={vocab} hidden={hid}: ms and temp MiB")
    keys = jax.random.split(jax.random.key(1), 4)
    logits = jax.random.normal(keys[0], (t, vocab), dtype)
    h = jax.random.normal(keys[1], (t, hid), dtype)
    w = (jax.random.normal(keys[2], (hid, vocab), jnp.float32) / np.sqrt(hid)).astype(dtype)
    y = jax.random.randint(keys[3], (t,), 0, vocab)
    cases = {
        "logits: xla (unfused)": (lambda x: K.softmax_cross_entropy(x, y, impl="xla"), (logits,)),
        "logits: pdx pallas": (lambda x: K.softmax_cross_entropy(x, y, impl="pallas"), (logits,)),
        "hidden: xla h@W then loss": (lambda h, w: K.linear_softmax_cross_entropy_reference(h, w, y), (h, w)),
        f"hidden: pdx chunked ({args.chunk})": (
            lambda h, w: K.linear_softmax_cross_entropy(h, w, y, chunk_size=args.chunk), (h, w)),
    }
    header = ["case", "fwd ms", "fwd+bwd ms", "bwd ms", "temp MiB (fwd+bwd)"]
    rows = []
    for name, (fn, inputs) in cases.items():
        loss = lambda *a, fn=fn: jnp.mean(fn(*a))  # noqa: E731
        grad = jax.grad(loss, argnums=tuple(range(len(inputs))))
        fwd_s = attempt(lambda: timed(jax.jit(loss), *inputs, repeats=args.repeats) * 1e3)
        both_s = attempt(lambda: timed(jax.jit(grad), *inputs, repeats=args.repeats) * 1e3)
        bwd_s = attempt(lambda: backward_ms(loss, inputs, args.repeats))
        rows.append([name, fmt(fwd_s, ".2f"), fmt(both_s, ".2f"), fmt(bwd_s, ".2f"),
                     fmt(attempt(lambda: temp_mb(grad, *inputs)), ".1f")])
        print("  ".join(rows[-1]), flush=True)
    table(header, rows)


# --------------------------------------------------------------------------- norms

def bench_norms(args):
    dtype = jnp.dtype(args.dtype)
    rows_n, n = args.norm_rows, args.norm_features
    print(f"\n## norms, {dtype}, {rows_n} x {n}: GB/s (forward: read x + write y; backward: read x, dy + write dx)")
    x = jax.random.normal(jax.random.key(2), (rows_n, n), dtype)
    p = jnp.ones((n,), dtype)
    nbytes = x.size * x.dtype.itemsize
    copy = jax.jit(lambda x: x + 1)
    copy_gbs = 2 * nbytes / timed(copy, x, repeats=args.repeats) / 1e9
    header = ["op", "impl", "fwd GB/s", "fwd+bwd GB/s", "fwd / copy"]
    rows = [["copy (x + 1)", "xla", f"{copy_gbs:.0f}", "", "1.00"]]
    ops = {"rms_norm": lambda x, w, impl: K.rms_norm(x, w, impl=impl),
           "layer_norm": lambda x, w, impl: K.layer_norm(x, w, w, impl=impl)}
    for op, fn in ops.items():
        for impl in ("pallas", "xla"):
            fwd = jax.jit(functools.partial(fn, impl=impl))
            both = jax.jit(jax.grad(lambda x, w, fn=fn, impl=impl: jnp.sum(fn(x, w, impl).astype(jnp.float32)),
                                    argnums=(0, 1)))
            f_gbs = attempt(lambda: 2 * nbytes / timed(fwd, x, p, repeats=args.repeats) / 1e9)
            b_gbs = attempt(lambda: 5 * nbytes / timed(both, x, p, repeats=args.repeats) / 1e9)
            ratio = "" if isinstance(f_gbs, str) else f"{f_gbs / copy_gbs:.2f}"
            rows.append([op, impl, fmt(f_gbs, ".0f"), fmt(b_gbs, ".0f"), ratio])
            print("  ".join(rows[-1]), flush=True)
    table(header, rows)


# --------------------------------------------------------------------------- main

def table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r + [""] * (len(header) - len(r))))


def ints(text):
    return [int(v) for v in text.split(",")]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=("attention", "ce", "norms"), action="append")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (CPU: Pallas in interpret mode)")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--seq", type=ints, default=None, help="comma-separated sequence lengths")
    parser.add_argument("--head-dims", type=ints, default=None)
    parser.add_argument("--tokens", type=int, default=None)
    parser.add_argument("--vocab", type=int, default=None)
    parser.add_argument("--hidden", type=int, default=None)
    parser.add_argument("--chunk", type=int, default=None)
    parser.add_argument("--norm-rows", type=int, default=None)
    parser.add_argument("--norm-features", type=int, default=None)
    args = parser.parse_args()
    full = dict(repeats=20, seq=[1024, 2048, 4096, 8192, 16384], head_dims=[64, 128], tokens=8192, vocab=128256,
                hidden=4096, chunk=8192, norm_rows=16384, norm_features=4096)
    smoke = dict(repeats=2, seq=[32], head_dims=[64], tokens=24, vocab=1000, hidden=32, chunk=256, norm_rows=64,
                 norm_features=256)
    for name, value in (smoke if args.smoke else full).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.smoke:
        args.batch, args.heads = min(args.batch, 1), min(args.heads, 2)
    print(f"# pdx.kernels benchmark — {device_name()} — jax {jax.__version__} — "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC"
          + (" — smoke sizes" if args.smoke else ""))
    if jax.default_backend() != "gpu":
        print("# no GPU: Pallas rows run in interpret mode and cuDNN is skipped; timings are not meaningful")
    sections = {"attention": bench_attention, "ce": bench_ce, "norms": bench_norms}
    for name in args.only or sections:
        sections[name](args)


if __name__ == "__main__":
    main()
