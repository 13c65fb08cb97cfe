"""Sparse row-wise embedding updates vs a dense-gradient step: DeepFM with a 1M- and a 10M-row table.

    python benchmarks/ctr_sparse.py                       # ~3 minutes on a 2-core CPU, ~4 GB of memory
    python benchmarks/ctr_sparse.py --rows 1000000 --repeats 3

Tables (rows x 16, plus FM's rows x 1 first-order table) are split by rows
over 8 host devices (`pdx.models.rec.TABLE_RULES`) and each batch is split
over them (data parallel). Both steps run the same
DeepFM (8 id fields, 4 dense features, DNN 64-32) on the same batches:

- sparse: `rec.make_sparse_step` — gradients of the looked-up rows only,
  deduplicated and applied by Adagrad on those rows (`rec.sparse_adagrad`) with a
  scatter into the donated table;
- dense: `pdx.train.make_step` with `pdx.optimizer.Adagrad` over every
  parameter — the full (rows, 16) table gradient and an update of every row
  (the same math: Adagrad leaves zero-gradient rows unchanged).

Prints examples/s (median over repeats, each repeat timing `--steps` steps,
blocking on each step), XLA's temp memory of each compiled step, per-device
table bytes, and the bytes each step writes to tables and their optimizer
state (touched rows x width for sparse, the whole tables for dense).
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
import pdx.nn.functional as F  # noqa: E402
from pdx.models import rec  # noqa: E402

FIELDS, DENSE, DIM = 8, 4, 16


def bce(model, batch):
    return F.binary_cross_entropy_with_logits(model(batch[0], batch[1])[:, 0], batch[2])


def batches(rows: int, batch: int, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        ids = rec.hash_ids(rng.integers(0, 2 ** 31 - 1, (batch, FIELDS)).astype(np.int32), rows,
                           field=jnp.arange(FIELDS))
        out.append((ids, jnp.asarray(rng.normal(size=(batch, DENSE)), jnp.float32),
                    jnp.asarray(rng.integers(0, 2, batch), jnp.float32)))
    return out


def time_steps(step, state, data, steps: int, repeats: int):
    state, loss = step(state, data[0])                      # compile + first run
    loss.block_until_ready()
    samples = []
    for r in range(repeats):
        start = time.perf_counter()
        for i in range(steps):
            state, loss = step(state, data[(r * steps + i) % len(data)])
            loss.block_until_ready()                        # XLA:CPU collectives: keep one step in flight
        samples.append((time.perf_counter() - start) / steps)
    return statistics.median(samples), state


def run(rows: int, batch: int, steps: int, repeats: int) -> dict:
    cfg = rec.CTRConfig(sparse_feature_number=rows, sparse_feature_dim=DIM, dense_feature_dim=DENSE,
                        sparse_num_field=FIELDS, layer_sizes=(64, 32))
    hybrid = pdx.parallel.HybridConfig(rules=rec.TABLE_RULES)
    data = batches(rows, batch, 8)
    mesh = hybrid.mesh()
    # data parallel: each device runs the dense network on batch / 8 examples
    split = tuple(pdx.parallel.named_sharding(("batch",) + (None,) * (x.ndim - 1), x.shape, hybrid, mesh)
                  for x in data[0])
    data = [jax.device_put(b, split) for b in data]
    out = {}

    model = rec.DeepFM(cfg, rngs=0)
    state = rec.SparseTrainState.create(model, pdx.optimizer.Adagrad(0.05, parameters=rec.dense_parameters(model)),
                                        rec.sparse_adagrad(0.05))
    del model
    shardings = rec.sparse_state_shardings(state, hybrid)
    state = jax.device_put(state, shardings)
    table = state.dense.buffers["fm.embedding.weight"]
    out["shard_bytes"] = table.addressable_shards[0].data.nbytes
    out["table_bytes"] = table.nbytes
    step = jax.jit(rec.make_sparse_step(bce), donate_argnums=0, in_shardings=(shardings, split),
                   out_shardings=(shardings, None))
    out["sparse_temp"] = step.lower(state, data[0]).compile().memory_analysis().temp_size_in_bytes
    out["sparse_s"], state = time_steps(step, state, data, steps, repeats)
    touched = np.mean([len(np.unique(np.asarray(d[0]))) for d in data])
    # table + accumulator rows written per step, both tables (width 16 and 1)
    out["sparse_write"] = touched * (DIM + 1) * 4 * 2
    del state, step

    model = rec.DeepFM(cfg, rngs=0)
    dense = pdx.TrainState.create(model, pdx.optimizer.Adagrad(0.05, parameters=model))
    del model
    dshardings = pdx.train.state_shardings(dense, hybrid)
    dense = jax.device_put(dense, dshardings)
    dstep = jax.jit(pdx.train.make_step(bce), donate_argnums=0, in_shardings=(dshardings, split),
                    out_shardings=(dshardings, None))
    out["dense_temp"] = dstep.lower(dense, data[0]).compile().memory_analysis().temp_size_in_bytes

    def dense_step(s, b):
        s, metrics = dstep(s, b)
        return s, metrics["loss"]

    out["dense_s"], dense = time_steps(dense_step, dense, data, steps, repeats)
    out["dense_write"] = rows * (DIM + 1) * 4 * 2
    del dense, dstep
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=lambda s: [int(v) for v in s.split(",")], default=[1_000_000, 10_000_000],
                        help="comma-separated table sizes")
    parser.add_argument("--batch", type=int, default=2048)
    parser.add_argument("--steps", type=int, default=5, help="steps per timed repeat")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"DeepFM, {FIELDS} id fields x dim {DIM} + {DENSE} dense, batch {args.batch}, "
          f"{jax.device_count()} {jax.devices()[0].platform} devices, Adagrad (sparse: touched rows; dense: whole tables)")
    print("| table rows | table MiB (per device) | step | examples/s | ms/step | XLA temp MiB | table+state MiB written/step | sparse/dense speed |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|")
    for rows in args.rows:
        r = run(rows, args.batch, args.steps, args.repeats)
        size = f"{r['table_bytes'] / 2**20:.0f} ({r['shard_bytes'] / 2**20:.0f})"
        for kind in ("sparse", "dense"):
            ratio = f"{r['dense_s'] / r['sparse_s']:.1f}x" if kind == "sparse" else "1.0x"
            print(f"| {rows:,} | {size} | {kind} | {args.batch / r[kind + '_s']:,.0f} | {r[kind + '_s'] * 1e3:.1f} | "
                  f"{r[kind + '_temp'] / 2**20:.1f} | {r[kind + '_write'] / 2**20:.2f} | {ratio} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
