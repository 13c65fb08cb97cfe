"""Paddle users find the same names, argument names and defaults; the
TrainState round-trips through pdx.checkpoint; Datasets go through pdx.io."""

import inspect

import jax
import numpy as np
import pytest

import pdx
import pdx.nn.functional as F
from pdx import nn


def _params(fn):
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY) and p.name != "self"]


@pytest.mark.parametrize("method", ["fit", "evaluate", "predict", "train_batch", "eval_batch", "predict_batch",
                                    "save", "load", "summary", "prepare"])
def test_model_methods_match_paddle(paddle, method):
    ours, theirs = _params(getattr(pdx.Model, method)), _params(getattr(paddle.Model, method))
    assert ours == theirs


@pytest.mark.parametrize("name", ["ProgBarLogger", "ModelCheckpoint", "EarlyStopping", "LRScheduler",
                                  "ReduceLROnPlateau", "VisualDL"])
def test_callback_constructors_match_paddle(paddle, name):
    assert _params(getattr(pdx.callbacks, name)) == _params(getattr(paddle.callbacks, name))


@pytest.mark.parametrize("name", ["Accuracy", "Precision", "Recall", "Auc"])
def test_metric_constructors_match_paddle(paddle, name):
    ours, theirs = _params(getattr(pdx.metric, name)), _params(getattr(paddle.metric, name))
    assert [n for n, _ in ours] == [n for n, _ in theirs]


@pytest.mark.parametrize("name", ["GradScaler", "auto_cast", "decorate"])
def test_amp_signatures_match_paddle(paddle, name):
    ours = dict(_params(getattr(pdx.amp, name)))
    theirs = dict(_params(getattr(paddle.amp, name)))
    shared = [k for k in theirs if k in ours]
    assert len(shared) >= len(theirs) - 2, (sorted(theirs), sorted(ours))  # at most 2 Paddle-internal knobs left out
    for k in shared:
        if k not in ("dtype", "level", "init_loss_scaling", "master_weight"):
            assert ours[k] == theirs[k], k


def test_summary_and_flops_signatures(paddle):
    assert [n for n, _ in _params(pdx.summary)] == [n for n, _ in _params(paddle.summary)]
    assert [n for n, _ in _params(pdx.flops)] == [n for n, _ in _params(paddle.flops)]


def test_train_state_round_trips_through_checkpoint_manager(tmp_path, rng):
    from pdx.checkpoint import CheckpointManager

    net = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.1), nn.BatchNorm1D(8), nn.Linear(8, 2))
    model = pdx.Model(net)
    model.prepare(pdx.optimizer.AdamW(1e-2, parameters=net), F.cross_entropy,
                  amp_configs={"dtype": "float16", "init_loss_scaling": 256.0})
    x, y = rng.normal(size=(16, 4)).astype(np.float32), rng.integers(0, 2, 16).astype(np.int32)
    model.train_batch([x], [y])
    saved = jax.tree.map(lambda a: np.asarray(a).copy(), model.train_state)
    with CheckpointManager(str(tmp_path), handle_sigterm=False) as mgr:
        mgr.save(1, model.train_state)
        mgr.wait_until_finished()
        model.train_batch([x], [y])  # move on, then go back
        model.train_state = mgr.restore(target=model.train_state).state
    restored = jax.tree.leaves(model.train_state)
    assert all(a.tobytes() == np.asarray(b).tobytes() for a, b in zip(jax.tree.leaves(saved), restored))
    assert int(model.train_state.step) == 1 and float(model.train_state.loss_scale.scale) == 256.0
    np.testing.assert_array_equal(np.asarray(model.network[0].weight[...]), np.asarray(saved.params["0.weight"]))


def test_fit_takes_a_pdx_io_dataset(rng):
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    data = pdx.io.TensorDataset([x, y])
    pdx.seed(0)
    net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    model = pdx.Model(net)
    model.prepare(pdx.optimizer.Adam(2e-2, parameters=net), F.cross_entropy, pdx.metric.Accuracy())
    sizes = []

    class Sizes(pdx.callbacks.Callback):
        def on_train_batch_end(self, step, logs=None):
            sizes.append(logs["batch_size"])

    model.fit(data, batch_size=24, epochs=3, drop_last=True, verbose=0, callbacks=[Sizes()])
    assert sizes == [24, 24] * 3  # batch_size and drop_last reached the DataLoader
    assert model.evaluate(data, batch_size=64, verbose=0)["acc"] > 0.8


def test_iterable_dataset_and_a_short_last_accumulation_group(rng):
    class Stream(pdx.io.IterableDataset):
        def __iter__(self):
            r = np.random.default_rng(0)
            for i in range(40):
                yield r.normal(size=4).astype(np.float32), np.int64(i % 2)

    net = nn.Linear(4, 2)
    net.eval()  # the TrainState trains in training mode whatever mode the network was left in
    model = pdx.Model(net)
    model.prepare(pdx.optimizer.SGD(0.1, parameters=net), F.cross_entropy)
    assert model.train_state.merge().training and not model.train_state.merge(training=False).training
    ends = []

    class Ends(pdx.callbacks.Callback):
        def on_train_batch_end(self, step, logs=None):
            ends.append((step, logs["batch_size"]))

    model.fit(Stream(), batch_size=8, epochs=1, verbose=0, accumulate_grad_batches=2, callbacks=[Ends()])
    assert ends == [(1, 16), (3, 16), (4, 8)]  # 5 batches: two groups of 2, then the last one alone
    assert int(model.train_state.step) == 3


def test_optimizer_state_and_sharding_carry_into_the_train_state(rng):
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    opt = pdx.optimizer.Adam(1e-2, parameters=net)
    pdx.parallel.shard([net, opt], pdx.parallel.HybridConfig(mp_degree=2))
    x, y = rng.normal(size=(8, 8)).astype(np.float32), rng.integers(0, 2, 8).astype(np.int32)
    _, grads = pdx.value_and_grad(lambda m: F.cross_entropy(m(x), y))(net)
    opt.step(grads)  # one eager step before handing over to the Model
    mu = np.asarray(opt.state_dict()["0/update/adam/mu/0.weight"]).copy()
    model = pdx.Model(net)
    model.prepare(opt, F.cross_entropy)
    state = model.train_state
    np.testing.assert_array_equal(np.asarray(state.opt_state[0]["update"]["adam"].mu["0.weight"]), mu)
    model.train_batch([x], [y])
    spec = model.train_state.params["0.weight"].sharding.spec
    assert tuple(spec) == (None, "mp")  # the tensor-parallel placement survives the compiled step
