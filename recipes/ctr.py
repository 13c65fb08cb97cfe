"""Click-through-rate prediction: DeepFM with sharded, sparsely trained embeddings on a synthetic click log.

The click log has a known logistic ground truth, so the best possible AUC
is known: each example has `fields` categorical ids (raw 64-bit values,
Zipf-distributed popularity per field) and `dense_dim` dense features;
logit = bias + per-id weights + pairwise field interactions <u_f(id), u_g(id')>
+ dense weights . x; a click is a Bernoulli draw of sigmoid(logit). Raw ids
are hashed into one shared table (`pdx.models.rec.hash_ids`, per-field salt).

DeepFM (`pdx.models.rec`) trains with Adagrad on the touched rows of the embedding
tables (only looked-up rows are read and written; tables split by rows over
all devices) and Adam on the dense part, in one jitted step with the state
donated. Held-out AUC comes from `pdx.metric.Auc`, next to the AUC of the
generating model's own probabilities (the ceiling).

    python recipes/ctr.py                          # ~16 s on a 2-core CPU (AUC 0.894, ceiling 0.925)
    python recipes/ctr.py --model wide-deep --epochs 2
    XLA_FLAGS=--xla_force_host_platform_device_count=8 python recipes/ctr.py   # tables over 8 devices, ~1 min
"""

from __future__ import annotations

import dataclasses
import time

import jax
import jax.numpy as jnp
import numpy as np

import pdx
import pdx.nn.functional as F
from pdx.models import rec


@dataclasses.dataclass(frozen=True)
class CTRRecipeConfig:
    model: str = "deepfm"           # "deepfm" or "wide-deep"
    train_examples: int = 1_000_000  # click-log rows to train on
    test_examples: int = 50_000     # held-out rows for AUC
    fields: int = 8                 # categorical id fields per example
    vocab: int = 2000               # distinct raw ids per field
    zipf: float = 1.1               # popularity skew of ids within a field
    dense_dim: int = 4              # dense features per example
    factor_dim: int = 4             # ground truth's interaction vector size
    buckets: int = 2 ** 16          # rows of the hashed embedding table
    embedding_dim: int = 8          # model's embedding size
    layer_sizes: tuple = (64, 32)   # DNN widths
    epochs: int = 3
    batch_size: int = 512
    sparse_lr: float = 0.1          # Adagrad on the touched table rows
    dense_lr: float = 3e-3          # Adam on the dense parameters
    seed: int = 0


def click_log(cfg: CTRRecipeConfig):
    """(raw ids int64 (N, fields), dense float32 (N, dense_dim), clicks float32 (N,), true probabilities (N,))."""
    rng = np.random.default_rng(cfg.seed)
    n = cfg.train_examples + cfg.test_examples
    raw_vocab = rng.integers(1, 2 ** 62, (cfg.fields, cfg.vocab), dtype=np.int64)    # opaque 64-bit raw ids
    weight = rng.normal(0.0, 0.6, (cfg.fields, cfg.vocab))                          # per-id first-order weight
    factors = rng.normal(0.0, 0.5, (cfg.fields, cfg.vocab, cfg.factor_dim))         # per-id interaction vectors
    beta = rng.normal(0.0, 0.5, cfg.dense_dim)
    popularity = 1.0 / np.arange(1, cfg.vocab + 1) ** cfg.zipf
    popularity /= popularity.sum()
    local = np.stack([rng.choice(cfg.vocab, n, p=popularity) for _ in range(cfg.fields)], axis=1)   # (N, F)
    dense = rng.normal(size=(n, cfg.dense_dim)).astype(np.float32)
    fields = np.arange(cfg.fields)
    u = factors[fields, local]                                                       # (N, F, k)
    pairwise = 0.5 * (np.square(u.sum(1)) - np.square(u).sum(1)).sum(1)
    logit = -1.0 + weight[fields, local].sum(1) + pairwise + dense @ beta
    prob = 1.0 / (1.0 + np.exp(-logit))
    clicks = (rng.random(n) < prob).astype(np.float32)
    return raw_vocab[fields, local], dense, clicks, prob


def auc(probs, labels) -> float:
    metric = pdx.metric.Auc()
    metric.update(np.asarray(probs).reshape(-1, 1), np.asarray(labels).reshape(-1, 1))
    return metric.accumulate()


def log_loss(probs, labels) -> float:
    p = np.clip(np.asarray(probs, np.float64), 1e-7, 1 - 1e-7)
    return float(-np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p)))


def bce(model, batch):
    ids, dense, clicks = batch
    return F.binary_cross_entropy_with_logits(model(ids, dense)[:, 0], clicks)


def main(cfg: CTRRecipeConfig) -> dict:
    raw, dense, clicks, true_prob = click_log(cfg)
    ids = np.asarray(rec.hash_ids(raw, cfg.buckets, field=jnp.arange(cfg.fields)))     # (N, F) table rows
    distinct = {(f, r) for f in range(cfg.fields) for r in np.unique(raw[:, f])}
    collisions = 1.0 - len(np.unique(ids)) / len(distinct)
    ntr = cfg.train_examples

    model_cfg = rec.CTRConfig(sparse_feature_number=cfg.buckets, sparse_feature_dim=cfg.embedding_dim,
                              dense_feature_dim=cfg.dense_dim, sparse_num_field=cfg.fields,
                              layer_sizes=tuple(cfg.layer_sizes))
    builders = {"deepfm": rec.DeepFM, "wide-deep": rec.WideDeep}
    if cfg.model not in builders:
        raise ValueError(f"ctr recipe: model must be one of {sorted(builders)}; got {cfg.model!r}")
    pdx.seed(cfg.seed)
    model = builders[cfg.model](model_cfg, rngs=cfg.seed)
    dense_opt = pdx.optimizer.Adam(cfg.dense_lr, parameters=rec.dense_parameters(model))
    state = rec.SparseTrainState.create(model, dense_opt, rec.sparse_adagrad(cfg.sparse_lr))
    hybrid = pdx.parallel.HybridConfig(rules=rec.TABLE_RULES)
    shardings = rec.sparse_state_shardings(state, hybrid)
    state = jax.device_put(state, shardings)
    # data parallel: the batch is split over the devices, the tables by rows over the same devices
    shapes = ((cfg.batch_size, cfg.fields), (cfg.batch_size, cfg.dense_dim), (cfg.batch_size,))
    split = tuple(pdx.parallel.named_sharding(("batch",) + (None,) * (len(s) - 1), s, hybrid) for s in shapes)
    step = jax.jit(rec.make_sparse_step(bce), donate_argnums=0, in_shardings=(shardings, split),
                   out_shardings=(shardings, None))

    @jax.jit
    def predict(state, ids, dense):
        return jax.nn.sigmoid(state.dense.merge(training=False)(ids, dense)[:, 0])

    def evaluate(state):
        probs = np.concatenate([np.asarray(predict(state, ids[i:i + 4096], dense[i:i + 4096]))
                                for i in range(ntr, len(ids), 4096)])
        return probs

    rng = np.random.default_rng(cfg.seed + 1)
    start, steps, losses = time.perf_counter(), 0, []
    for epoch in range(cfg.epochs):
        order = rng.permutation(ntr)
        for i in range(0, ntr - cfg.batch_size + 1, cfg.batch_size):
            take = order[i:i + cfg.batch_size]
            state, loss = step(state, (ids[take], dense[take], clicks[take]))
            # XLA:CPU runs the 8 forced host devices' collectives on a small thread pool; hundreds of
            # queued steps can starve a rendezvous, so wait for each step (a few % of a CPU step).
            loss.block_until_ready()
            steps += 1
            if steps % 100 == 0:
                losses.append(float(loss))
        probs = evaluate(state)
        print(f"epoch {epoch + 1}: train loss {float(loss):.4f}, held-out AUC {auc(probs, clicks[ntr:]):.4f}")
    train_s = time.perf_counter() - start

    test = slice(ntr, None)
    results = {
        f"{cfg.model} (pdx, sparse Adagrad tables)": dict(auc=auc(probs, clicks[test]),
                                                          log_loss=log_loss(probs, clicks[test])),
        "ground truth (generating model)": dict(auc=auc(true_prob[test], clicks[test]),
                                                log_loss=log_loss(true_prob[test], clicks[test])),
    }
    table = max((state.dense.buffers[name] for name in state.tables), key=lambda t: t.size)   # the (rows, dim) one
    print(f"\n{cfg.model} on a synthetic click log: {ntr} train / {cfg.test_examples} held-out examples, "
          f"{cfg.fields} id fields ({len(distinct)} distinct raw ids hashed into {cfg.buckets} rows, "
          f"{collisions:.1%} collisions), {cfg.dense_dim} dense features")
    print(f"table {table.shape} split {table.sharding.spec} over {len(jax.devices())} device(s); "
          f"{steps} steps in {train_s:.1f} s ({steps * cfg.batch_size / train_s:,.0f} examples/s)")
    print("| model | held-out AUC | log loss |\n|---|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['auc']:.4f} | {r['log_loss']:.4f} |")
    results["train_seconds"] = train_s
    results["losses"] = losses
    return results


if __name__ == "__main__":
    from _config_cli import parse_config  # recipes/ is sys.path[0] when a recipe runs

    main(parse_config(CTRRecipeConfig, __doc__))
