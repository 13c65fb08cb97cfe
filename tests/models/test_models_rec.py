"""pdx.models.rec: hashing, DeepFM / Wide&Deep against numpy, sparse row-wise updates against a dense
reference, and a 1M-row table split over 8 devices trained with per-step cost set by the touched rows."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.nn.functional as F
from pdx.models import rec


def _bce(m, b):
    return F.binary_cross_entropy_with_logits(m(b[0], b[1])[:, 0], b[2])


def _batch(rng, cfg, n, *, duplicates=False):
    ids = rng.integers(0, cfg.sparse_feature_number, (n, cfg.sparse_num_field))
    if duplicates:  # the same id in several examples and several fields of one example
        ids[:, 0] = 3
        ids[1, 1] = ids[0, 2]
    return (jnp.asarray(ids, jnp.int32), jnp.asarray(rng.normal(size=(n, cfg.dense_feature_dim)), jnp.float32),
            jnp.asarray(rng.integers(0, 2, n), jnp.float32))


# ---- public surface and zoo -------------------------------------------------------------------------
def test_public_names_and_zoo():
    for name in rec.__all__:
        assert getattr(rec, name) is not None, name
    from pdx.models import _zoo

    names = {m["name"]: m for m in _zoo.list("rec", params=False)}
    assert {"deepfm", "deepfm-tiny", "wide-deep", "wide-deep-tiny"} <= set(names)
    model = _zoo.create("deepfm-tiny", sparse_num_field=3)
    assert isinstance(model, rec.DeepFM) and model.config.sparse_num_field == 3
    with pytest.raises(ValueError, match="sparse_inputs must be"):
        model(jnp.zeros((2, 4), jnp.int32), jnp.zeros((2, 4)))
    with pytest.raises(ValueError, match="dense_inputs must have shape"):
        model(jnp.zeros((2, 3), jnp.int32), jnp.zeros((2, 5)))
    with pytest.raises(ValueError, match="no preset"):
        rec.CTRConfig.from_preset("deepfm-huge")
    with pytest.raises(ValueError, match="sparse_feature_dim must be a positive int"):
        rec.CTRConfig(sparse_feature_dim=0)


# ---- hashing ----------------------------------------------------------------------------------------
def _np_fmix(x):
    x = x.astype(np.uint64) & 0xFFFFFFFF
    x ^= x >> 16
    x = (x * 0x85EBCA6B) & 0xFFFFFFFF
    x ^= x >> 13
    x = (x * 0xC2B2AE35) & 0xFFFFFFFF
    return x ^ (x >> 16)


def _np_hash(raw, n, salt, field):
    raw = np.asarray(raw).astype(np.uint64)
    seed = _np_fmix(np.uint64(salt & 0xFFFFFFFF) ^ _np_fmix((np.asarray(field, np.uint64) + 0x9E3779B9) & 0xFFFFFFFF))
    h = _np_fmix((raw & 0xFFFFFFFF) ^ seed)
    high = raw >> 32
    h = np.where(high > 0, _np_fmix(h ^ _np_fmix((high + 0x9E3779B9) & 0xFFFFFFFF)), h) if raw.max() >= 2**32 else h
    return (h % n).astype(np.int64)


def test_hash_ids_matches_numpy_is_deterministic_and_uniform(rng):
    raw = rng.integers(0, 2**31 - 1, (2000, 5))
    field = np.arange(5)
    got = np.asarray(rec.hash_ids(raw.astype(np.int32), 1009, salt=17, field=jnp.arange(5)))
    np.testing.assert_array_equal(got, _np_hash(raw, 1009, 17, field))
    jitted = jax.jit(lambda r: rec.hash_ids(r, 1009, salt=17, field=jnp.arange(5)))(jnp.asarray(raw, jnp.int32))
    np.testing.assert_array_equal(np.asarray(jitted), got)
    # 64-bit ids: both words matter, and the numpy reference agrees
    big = rng.integers(2**32, 2**62, 1000, dtype=np.int64)
    np.testing.assert_array_equal(np.asarray(rec.hash_ids(big, 4096)), _np_hash(big, 4096, 0, 0))
    assert not np.array_equal(np.asarray(rec.hash_ids(big, 4096)), np.asarray(rec.hash_ids(big + 2**40, 4096)))
    # per-field salt: the same raw id lands elsewhere in another field, and salts give independent hashes
    same = np.asarray(rec.hash_ids(np.full((1000, 2), 7, np.int32) + np.arange(1000)[:, None].astype(np.int32),
                                   10**6, field=jnp.arange(2)))
    assert np.mean(same[:, 0] == same[:, 1]) < 0.01
    # uniformity: consecutive ids (the worst case for a weak hash) fill 64 buckets evenly (chi-square, 63 dof)
    counts = np.bincount(np.asarray(rec.hash_ids(np.arange(64000, dtype=np.int32), 64)), minlength=64)
    chi2 = np.sum((counts - 1000.0) ** 2 / 1000.0)
    assert chi2 < 110, chi2  # P(chi2_63 > 110) ~ 2e-4
    with pytest.raises(ValueError, match="num_buckets must be an int"):
        rec.hash_ids(raw, 0)
    with pytest.raises(TypeError, match="must be integers"):
        rec.hash_ids(np.ones(3), 10)


# ---- models against numpy ---------------------------------------------------------------------------
def _np_dnn(x, w, prefix):
    i = 0
    while f"{prefix}._mlp_layers.{i}.weight" in w:
        x = x @ w[f"{prefix}._mlp_layers.{i}.weight"] + w[f"{prefix}._mlp_layers.{i}.bias"]
        i += 1
        if f"{prefix}._mlp_layers.{i}.weight" in w:
            x = np.maximum(x, 0)
    return x


def _np_deepfm(w, ids, dense):
    first = w["fm.embedding_one.weight"][ids][..., 0].sum(1, keepdims=True) + (dense * w["fm.dense_w_one"]).sum(1, keepdims=True)
    v = np.concatenate([w["fm.embedding.weight"][ids], dense[:, :, None] * w["fm.dense_w"]], axis=1)
    second = 0.5 * (v.sum(1) ** 2 - (v ** 2).sum(1)).sum(1, keepdims=True)
    return first + second + _np_dnn(v.reshape(len(ids), -1), w, "dnn")


def _np_widedeep(w, ids, dense):
    wide = w["wide_embedding.weight"][ids][..., 0].sum(1, keepdims=True) + dense @ w["wide_part.weight"] + w["wide_part.bias"]
    x = np.concatenate([w["embedding.weight"][ids].reshape(len(ids), -1), dense], axis=1)
    return wide + _np_dnn(x, w, "deep")


def test_models_match_numpy(rng):
    for cls, ref, preset in ((rec.DeepFM, _np_deepfm, "deepfm-tiny"), (rec.WideDeep, _np_widedeep, "wide-deep-tiny")):
        model = cls(preset, rngs=1)
        weights = {k: np.asarray(v, np.float64) for k, v in model.state_dict().items()}
        weights = {k: v + rng.normal(scale=0.05, size=v.shape) for k, v in weights.items()}  # wide_embedding starts at 0
        model.set_state_dict({k: jnp.asarray(v, jnp.float32) for k, v in weights.items()})
        ids, dense, _ = _batch(rng, model.config, 9)
        got = np.asarray(model(ids, dense))
        np.testing.assert_allclose(got, ref(weights, np.asarray(ids), np.asarray(dense, np.float64)), rtol=1e-4, atol=1e-5)
        assert got.shape == (9, 1)


# ---- sparse updates against a dense numpy reference -------------------------------------------------
def test_dedup_rows_matches_numpy(rng):
    ids = rng.integers(0, 50, 300)
    grads = rng.normal(size=(300, 3)).astype(np.float32)
    unique, summed = jax.jit(rec.dedup_rows, static_argnums=2)(jnp.asarray(ids, jnp.int32), jnp.asarray(grads), 50)
    want_ids = np.unique(ids)
    want = np.zeros((50, 3))
    np.add.at(want, ids, grads)
    k = len(want_ids)
    np.testing.assert_array_equal(np.asarray(unique[:k]), want_ids)
    np.testing.assert_array_equal(np.asarray(unique[k:]), 50)            # padding: out of range, dropped
    np.testing.assert_allclose(np.asarray(summed[:k]), want[want_ids], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(summed[k:]), 0)


def test_sparse_updates_match_dense_reference(rng):
    """Full-table gradients (autodiff of the plain model) + the optimizer in numpy, applied where a
    gradient row is non-zero, equal the sparse step's dedup + scatter (duplicate ids in the batch)."""
    cfg = rec.CTRConfig(sparse_feature_number=40, sparse_feature_dim=4, dense_feature_dim=3, sparse_num_field=5,
                        layer_sizes=(8,))
    batches = [_batch(rng, cfg, 6, duplicates=True) for _ in range(3)]
    lr = 0.05
    cases = [("adagrad", rec.sparse_adagrad(lr)), ("rowwise-adagrad", rec.sparse_adagrad(lr, rowwise=True)),
             ("lazy-adam", rec.lazy_adam(lr))]
    for label, sparse_opt in cases:
        model = rec.DeepFM(cfg, rngs=2)
        init = {k: np.asarray(v, np.float64) for k, v in model.state_dict().items()}
        state = rec.SparseTrainState.create(model, pdx.optimizer.SGD(lr, parameters=rec.dense_parameters(model)),
                                            sparse_opt)
        step = jax.jit(rec.make_sparse_step(_bce), donate_argnums=0)
        ref = dict(init)
        acc = {k: np.zeros(v.shape[:1] if label == "rowwise-adagrad" else v.shape) for k, v in init.items()}
        m1 = {k: np.zeros_like(v) for k, v in init.items()}
        m2 = {k: np.zeros_like(v) for k, v in init.items()}
        grad_fn = jax.jit(jax.grad(lambda w, b: _bce(_merged(model, w), b)))
        tables = ("fm.embedding.weight", "fm.embedding_one.weight")
        touched_ever = {k: np.zeros(init[k].shape[0], bool) for k in tables}
        for t, batch in enumerate(batches, start=1):
            grads = {k: np.asarray(v, np.float64) for k, v in
                     grad_fn({k: jnp.asarray(v, jnp.float32) for k, v in ref.items()}, batch).items()}
            for k, g in grads.items():
                if k not in tables:
                    ref[k] = ref[k] - lr * g
                    continue
                rows = np.any(g != 0, axis=1)
                touched_ever[k] |= rows
                if label == "adagrad":
                    acc[k][rows] += g[rows] ** 2
                    ref[k][rows] -= lr * g[rows] / (np.sqrt(acc[k][rows]) + 1e-6)
                elif label == "rowwise-adagrad":
                    acc[k][rows] += np.mean(g[rows] ** 2, axis=1)
                    ref[k][rows] -= lr * g[rows] / (np.sqrt(acc[k][rows])[:, None] + 1e-6)
                else:
                    m1[k][rows] = 0.9 * m1[k][rows] + 0.1 * g[rows]
                    m2[k][rows] = 0.999 * m2[k][rows] + 0.001 * g[rows] ** 2
                    c2 = np.sqrt(1 - 0.999 ** t)
                    ref[k][rows] -= lr * c2 / (1 - 0.9 ** t) * m1[k][rows] / (np.sqrt(m2[k][rows]) + 1e-8 * c2)
            state, _ = step(state, batch)
        got = state.dense.state_dict()
        # Adam divides by sqrt(v) ~ |g|: float32 rounding of the two gradient paths (dense autodiff vs
        # looked-up rows) is amplified to ~1e-6 on rows with tiny gradients, so Adam gets 1e-5.
        atol = 1e-5 if label == "lazy-adam" else 1e-6
        for k in init:
            np.testing.assert_allclose(np.asarray(got[k], np.float64), ref[k], atol=atol, rtol=0, err_msg=f"{label} {k}")
        for k in tables:  # untouched rows: values identical to the start
            assert 0 < touched_ever[k].sum() < len(touched_ever[k])
            np.testing.assert_array_equal(np.asarray(got[k])[~touched_ever[k]], init[k][~touched_ever[k]].astype(np.float32))


def _merged(model, weights):
    """A copy of `model` holding `weights` (traced), for the reference's full-table gradient."""
    from flax import nnx

    copy = nnx.clone(model)
    for name, var in copy.named_parameters():
        var.set_value(weights[name])
    return copy


def test_sparse_step_equals_dense_adagrad_training(rng):
    """Element-wise sparse Adagrad == pdx.optimizer.Adagrad over the whole table (zero rows do not move),
    trained through pdx.train's dense step: Wide&Deep, several steps."""
    cfg = rec.PRESETS["wide-deep-tiny"]
    batches = [_batch(rng, cfg, 16, duplicates=True) for _ in range(4)]
    sparse_model, dense_model = rec.WideDeep(cfg, rngs=3), rec.WideDeep(cfg, rngs=3)
    state = rec.SparseTrainState.create(sparse_model, pdx.optimizer.Adagrad(0.1, parameters=rec.dense_parameters(sparse_model)),
                                        rec.sparse_adagrad(0.1))
    dense = pdx.TrainState.create(dense_model, pdx.optimizer.Adagrad(0.1, parameters=dense_model))
    sstep = jax.jit(rec.make_sparse_step(_bce), donate_argnums=0)
    dstep = jax.jit(pdx.train.make_step(_bce))
    for batch in batches:
        state, loss = sstep(state, batch)
        dense, metrics = dstep(dense, batch)
        np.testing.assert_allclose(float(loss), float(metrics["loss"]), rtol=1e-5)
    got, want = state.dense.state_dict(), dense.state_dict()
    # Adagrad's first step on a row is ~lr * sign(g): float32 rounding of the two gradient paths on
    # tiny gradients shows up at a few 1e-6 of lr=0.1 after four steps (3.8e-6 seen on an AVX2 CPU).
    for k in want:
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), atol=1e-5, err_msg=k)
    state.update_model(sparse_model)
    np.testing.assert_array_equal(np.asarray(sparse_model.embedding.weight[...]), np.asarray(got["embedding.weight"]))
    with pytest.raises(ValueError, match="dense optimizer holds SparseEmbedding tables"):
        rec.SparseTrainState.create(dense_model, pdx.optimizer.SGD(0.1, parameters=dense_model), rec.sparse_adagrad(0.1))
    with pytest.raises(ValueError, match="learning_rate must be a non-negative number"):
        rec.sparse_adagrad(-1.0)


# ---- a 1M-row table over 8 devices ------------------------------------------------------------------
def test_sharded_million_row_table_trains_with_touched_row_cost(rng):
    assert jax.device_count() == 8
    rows, dim = 1_000_000, 16
    cfg = rec.CTRConfig(sparse_feature_number=rows, sparse_feature_dim=dim, dense_feature_dim=4, sparse_num_field=8,
                        layer_sizes=(32,))
    hybrid = pdx.parallel.HybridConfig()
    model = rec.DeepFM(cfg, rngs=4)
    before = np.asarray(model.fm.embedding.weight[...][:2000])
    state = rec.SparseTrainState.create(model, pdx.optimizer.Adam(1e-2, parameters=rec.dense_parameters(model)),
                                        rec.sparse_adagrad(0.05))
    shardings = rec.sparse_state_shardings(state, hybrid)
    state = jax.device_put(state, shardings)
    table = state.dense.buffers["fm.embedding.weight"]
    assert table.sharding.spec == jax.sharding.PartitionSpec("dp", None)
    shards = table.addressable_shards
    assert len(shards) == 8 and {s.data.shape for s in shards} == {(rows // 8, dim)}
    assert sum(s.data.nbytes for s in shards) == rows * dim * 4 and shards[0].data.nbytes == rows * dim * 4 // 8
    acc = state.tables["fm.embedding.weight"].accumulator
    assert {s.data.shape for s in acc.addressable_shards} == {(rows // 8, dim)}

    step = jax.jit(rec.make_sparse_step(_bce), donate_argnums=0, in_shardings=(shardings, None),
                   out_shardings=(shardings, None))
    # ids from rows >= 2000 only, so rows < 2000 must come out untouched
    batches = []
    for _ in range(4):
        ids, dense, labels = _batch(rng, cfg, 256)
        batches.append((jnp.maximum(ids, 2000), dense, labels))
    compiled = step.lower(state, batches[0]).compile()
    collectives = pdx.parallel.collective_summary(compiled)
    assert "all-gather" not in collectives, collectives       # the table is never gathered
    assert collectives["all-reduce"]["bytes"] < 2 * 256 * 8 * (dim + 1) * 4 * 4, collectives  # only looked-up rows
    losses = []
    for _ in range(3):
        for batch in batches:
            state, loss = step(state, batch)
            losses.append(float(loss))
    assert losses[-1] < losses[0], losses
    new_table = state.dense.buffers["fm.embedding.weight"]
    assert new_table.sharding.spec == jax.sharding.PartitionSpec("dp", None)
    np.testing.assert_array_equal(np.asarray(new_table[:2000]), before)
    touched = np.unique(np.concatenate([np.asarray(b[0]).ravel() for b in batches]))
    assert np.all(np.asarray(state.tables["fm.embedding.weight"].accumulator[touched]) > 0)  # every touched row updated

    # compiled cost: the sparse step's scratch memory does not grow with the table; a dense-gradient step's does.
    # The steps are compiled for abstract states: a small model's state with the tables' row count replaced.
    small_rows = 1024
    small = rec.DeepFM(dataclasses.replace(cfg, sparse_feature_number=small_rows), rngs=0)
    sparse_small = rec.SparseTrainState.create(small, pdx.optimizer.Adam(1e-2, parameters=rec.dense_parameters(small)),
                                               rec.sparse_adagrad(0.05))
    dense_small = pdx.TrainState.create(small, pdx.optimizer.Adagrad(0.05, parameters=small))

    def with_rows(st, n_rows):
        return jax.tree.map(lambda x: jax.ShapeDtypeStruct(
            (n_rows, *x.shape[1:]) if x.ndim and x.shape[0] == small_rows else x.shape, x.dtype), st)

    def temp_bytes(n_rows, sparse):
        if sparse:
            st = with_rows(sparse_small, n_rows)
            sh = rec.sparse_state_shardings(st, hybrid)
            fn = jax.jit(rec.make_sparse_step(_bce), donate_argnums=0, in_shardings=(sh, None), out_shardings=(sh, None))
        else:
            st = with_rows(dense_small, n_rows)
            sh = pdx.train.state_shardings(st, dataclasses.replace(hybrid, rules=rec.TABLE_RULES))
            fn = jax.jit(pdx.train.make_step(_bce), donate_argnums=0, in_shardings=(sh, None), out_shardings=(sh, None))
        return fn.lower(st, batches[0]).compile().memory_analysis().temp_size_in_bytes

    shard_bytes = rows * dim * 4 // 8
    sparse_1m, sparse_4m = temp_bytes(rows, True), temp_bytes(4 * rows, True)
    dense_1m = temp_bytes(rows, False)
    assert sparse_1m == sparse_4m, (sparse_1m, sparse_4m)     # set by the 256 x 8 looked-up rows
    assert sparse_1m < shard_bytes / 2 < shard_bytes <= dense_1m, (sparse_1m, shard_bytes, dense_1m)
