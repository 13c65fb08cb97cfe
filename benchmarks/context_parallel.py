"""Context-parallel attention: ring against all-gather, per device.

For each sequence length and sep degree, compiles causal GQA attention
forward + backward (`pdx.parallel.context_attention`, the sequence split over
"sep") and prints the per-device temp memory XLA plans
(`memory_analysis().temp_size_in_bytes`), the collectives it emits
(`pdx.parallel.collective_summary`: count and bytes per kind) and the median
ms per call; the unsharded one-device attention (`pdx.kernels.flash_attention`,
XLA reference on CPU) is the baseline row. A second table does the same for a
whole llama-tiny train step at sep 1 / 2 / 4.

    python benchmarks/context_parallel.py                       # 8 host CPU devices, ~2 min on 2 cores
    python benchmarks/context_parallel.py --seq 1024,4096 --sep 2,4,8 --repeat 5
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import pdx  # noqa: E402
from pdx import kernels, parallel  # noqa: E402


def _collectives(compiled) -> str:
    summary = parallel.collective_summary(compiled)
    short = {"all-gather": "AG", "all-reduce": "AR", "reduce-scatter": "RS", "collective-permute": "CP",
             "all-to-all": "A2A"}
    return " ".join(f"{short[k]} {v['count']}x/{v['bytes'] / 2**20:.2f}MiB" for k, v in sorted(summary.items())) or "-"


def _median_ms(fn, args, repeat):
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def attention_rows(seqs, seps, repeat, batch=1, heads=8, kv_heads=2, head_dim=64):
    rng = np.random.default_rng(0)
    rows = []
    for s in seqs:
        q = jnp.asarray(rng.normal(size=(batch, s, heads, head_dim)), jnp.float32)
        k, v = (jnp.asarray(rng.normal(size=(batch, s, kv_heads, head_dim)), jnp.float32) for _ in range(2))

        def loss_local(q, k, v):
            return kernels.flash_attention(q, k, v, causal=True, impl="xla").sum()

        step = jax.jit(jax.value_and_grad(loss_local, argnums=(0, 1, 2)))
        compiled = step.lower(q, k, v).compile()
        rows.append((s, 1, "one device", compiled.memory_analysis().temp_size_in_bytes, _collectives(compiled),
                     _median_ms(step, (q, k, v), repeat)))
        for sep in seps:
            for impl in ("ring", "allgather"):
                config = parallel.HybridConfig(dp_degree=1, sep_degree=sep, context_parallel=impl)
                mesh = config.mesh(jax.devices()[:sep])
                spec = parallel.named_sharding(("batch", "seq", None, None), q.shape, config, mesh)
                args = [jax.device_put(a, spec) for a in (q, k, v)]

                def loss(q, k, v, config=config, mesh=mesh):
                    return parallel.context_attention(q, k, v, causal=True, config=config, mesh=mesh).sum()

                step = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2)))
                compiled = step.lower(*args).compile()
                rows.append((s, sep, impl, compiled.memory_analysis().temp_size_in_bytes, _collectives(compiled),
                             _median_ms(step, args, repeat)))
    return rows


def llama_rows(seq, seps):
    from pdx.models.llama import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig.from_preset("tiny", vocab_size=64, max_position_embeddings=seq)

    @pdx.jit
    def train_step(model, opt, x, y):
        loss, grads = pdx.value_and_grad(lambda m: m.loss(x, y, chunk_size=None))(model)
        opt.step(grads)
        return loss

    rows = []
    tokens = np.random.default_rng(0).integers(0, 64, (1, seq + 1)).astype(np.int32)
    for sep in seps:
        for impl in (("ring", "allgather") if sep > 1 else ("ring",)):
            pdx.seed(0)
            model = LlamaForCausalLM(cfg)
            opt = pdx.optimizer.Momentum(learning_rate=0.1, parameters=model)
            config = parallel.HybridConfig(dp_degree=1, sep_degree=sep, context_parallel=impl)
            mesh = config.mesh(jax.devices()[:sep])
            parallel.shard([model, opt], config, mesh=mesh)
            sharding = parallel.named_sharding(("batch", "seq"), (1, seq), config, mesh)
            x, y = (jax.device_put(a, sharding) for a in (tokens[:, :-1], tokens[:, 1:]))
            with parallel.use_mesh(config, mesh):
                compiled = train_step.lower(model, opt, x, y).compile()
                loss = float(train_step(model, opt, x, y))
            rows.append((seq, sep, impl if sep > 1 else "one device", compiled.memory_analysis().temp_size_in_bytes,
                         _collectives(compiled), loss))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seq", default="1024,2048,4096", help="comma-separated sequence lengths")
    parser.add_argument("--sep", default="2,4", help="comma-separated sep degrees")
    parser.add_argument("--llama_seq", type=int, default=2048, help="sequence length of the llama-tiny rows (0 = skip)")
    parser.add_argument("--repeat", type=int, default=3, help="timed calls per row (median)")
    args = parser.parse_args(argv)
    seqs = [int(s) for s in args.seq.split(",")]
    seps = [int(s) for s in args.sep.split(",")]
    print(f"devices: {jax.device_count()} x {jax.devices()[0].device_kind}; causal GQA attention "
          "(batch 1, 8 heads, 2 kv heads, head_dim 64), forward + backward, per device")
    print("| seq | sep | impl | temp MiB | collectives (count / bytes) | ms |")
    print("|---:|---:|---|---:|---|---:|")
    for s, sep, impl, temp, coll, ms in attention_rows(seqs, seps, args.repeat):
        print(f"| {s} | {sep} | {impl} | {temp / 2**20:.1f} | {coll} | {ms:.1f} |")
    if args.llama_seq:
        print(f"\nllama-tiny (2 layers, hidden 64) train step, batch 1 x {args.llama_seq} tokens, per device")
        print("| seq | sep | impl | temp MiB | collectives (count / bytes) | loss |")
        print("|---:|---:|---|---:|---|---:|")
        for s, sep, impl, temp, coll, loss in llama_rows(args.llama_seq, [1] + seps):
            print(f"| {s} | {sep} | {impl} | {temp / 2**20:.1f} | {coll} | {loss:.6f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
