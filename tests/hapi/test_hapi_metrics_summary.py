"""pdx.metric against paddle.metric; pdx.summary / pdx.flops against paddle.summary
and hand counts; pdx.profiler schedules against paddle.profiler and real trace
files; the LR callbacks; AMP policy and decorate."""

import glob
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.nn.functional as F
from pdx import nn


def test_accuracy_topk_matches_paddle(paddle, rng):
    ours, theirs = pdx.metric.Accuracy(topk=(1, 3)), paddle.metric.Accuracy(topk=(1, 3))
    for _ in range(3):
        pred = rng.normal(size=(16, 5)).astype(np.float32)
        label = rng.integers(0, 5, size=(16, 1)).astype(np.int64)
        a = ours.update(ours.compute(jnp.asarray(pred), jnp.asarray(label)))
        b = theirs.update(theirs.compute(paddle.to_tensor(pred), paddle.to_tensor(label)))
        np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_allclose(ours.accumulate(), theirs.accumulate(), rtol=1e-6)
    assert ours.name() == theirs.name()


@pytest.mark.parametrize("cls", ["Precision", "Recall"])
def test_precision_recall_match_paddle(paddle, rng, cls):
    ours, theirs = getattr(pdx.metric, cls)(), getattr(paddle.metric, cls)()
    for _ in range(3):
        preds = rng.uniform(size=(32,)).astype(np.float32)
        labels = rng.integers(0, 2, size=(32,)).astype(np.int64)
        ours.update(*ours.compute(jnp.asarray(preds), jnp.asarray(labels)))  # device thresholding
        theirs.update(preds, labels)
    assert ours.accumulate() == pytest.approx(theirs.accumulate(), rel=1e-9)


def test_auc_matches_paddle_and_sklearn(paddle, rng):
    from sklearn.metrics import roc_auc_score

    ours, theirs = pdx.metric.Auc(), paddle.metric.Auc()
    all_p, all_l = [], []
    for _ in range(3):
        p1 = rng.uniform(size=(64,)).astype(np.float32)
        labels = (rng.uniform(size=(64,)) < p1).astype(np.int64)
        preds = np.stack([1 - p1, p1], axis=1)
        ours.update(*ours.compute(jnp.asarray(preds), jnp.asarray(labels)))
        theirs.update(preds, labels.reshape(-1, 1))
        all_p.append(p1)
        all_l.append(labels)
    assert ours.accumulate() == pytest.approx(theirs.accumulate(), abs=1e-9)
    assert ours.accumulate() == pytest.approx(roc_auc_score(np.concatenate(all_l), np.concatenate(all_p)), abs=2e-3)


def _paddle_lenet(paddle):
    pnn = paddle.nn
    return pnn.Sequential(pnn.Conv2D(1, 6, 3, padding=1), pnn.ReLU(), pnn.MaxPool2D(2),
                          pnn.Conv2D(6, 16, 5), pnn.ReLU(), pnn.MaxPool2D(2),
                          pnn.Flatten(), pnn.Linear(400, 120), pnn.Linear(120, 84), pnn.Linear(84, 10))


def _pdx_lenet():
    return nn.Sequential(nn.Conv2D(1, 6, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2),
                         nn.Conv2D(6, 16, 5), nn.ReLU(), nn.MaxPool2D(2),
                         nn.Flatten(), nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10))


def test_summary_matches_paddle(paddle, capsys):
    theirs = paddle.summary(_paddle_lenet(paddle), (1, 1, 28, 28))
    capsys.readouterr()
    net = _pdx_lenet()
    before = {k: np.asarray(v).copy() for k, v in net.state_dict().items()}
    ours = pdx.summary(net, (1, 1, 28, 28))
    table = capsys.readouterr().out
    assert ours == {"total_params": int(theirs["total_params"]), "trainable_params": int(theirs["trainable_params"])}
    assert "Conv2D-2" in table and "[1, 16, 10, 10]" in table and "Linear-3" in table and "[1, 10]" in table
    assert f"Total params: {int(theirs['total_params']):,}" in table and "Estimated Total Size (MB)" in table
    assert all(np.array_equal(before[k], np.asarray(v)) for k, v in net.state_dict().items())  # nothing ran on it


def test_summary_takes_input_specs_as_paddle_does(paddle, capsys):
    theirs = paddle.summary(_paddle_lenet(paddle), input_size=paddle.static.InputSpec([None, 1, 28, 28], "float32"))
    spec = pdx.static.InputSpec([None, 1, 28, 28], "float32", "image")
    ours = pdx.summary(_pdx_lenet(), input_size=spec)
    assert ours == {"total_params": int(theirs["total_params"]), "trainable_params": int(theirs["trainable_params"])}
    assert "[1, 10]" in capsys.readouterr().out  # the None batch is summarized as 1

    class Two(nn.Layer):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 2), nn.Embedding(10, 2)

        def forward(self, x, ids):
            return self.a(x) + self.b(ids)

    specs = (pdx.static.InputSpec([None, 4], "float32"), pdx.static.InputSpec([None], "int32"))
    assert pdx.summary(Two(), input_size=specs) == {"total_params": 30, "trainable_params": 30}  # int ids: dtypes kept


def test_summary_input_is_the_forwards_one_argument_as_in_paddle(paddle, capsys):
    """`input=` a list or dict goes to forward as one argument (Paddle's `net(input)`), like PaddleTest's nets."""
    class Pair(nn.Layer):
        def __init__(self, as_dict):
            super().__init__()
            self.as_dict, self.a, self.b = as_dict, nn.Linear(4, 2), nn.Linear(3, 2)

        def forward(self, inputs):
            x, y = (inputs["x"], inputs["y"]) if self.as_dict else inputs
            return self.a(x) + self.b(y)

    x, y = pdx.ones([2, 4]), pdx.ones([2, 3])
    assert pdx.summary(Pair(False), input=[x, y]) == {"total_params": 18, "trainable_params": 18}
    assert pdx.summary(Pair(True), input={"x": x, "y": y}) == {"total_params": 18, "trainable_params": 18}
    assert "[2, 2]" in capsys.readouterr().out


def test_summary_counts_frozen_parameters(capsys):
    net = nn.Sequential(nn.Linear(4, 3, weight_attr=pdx.ParamAttr(trainable=False)), nn.Linear(3, 2))
    assert pdx.summary(net, (2, 4)) == {"total_params": 23, "trainable_params": 11}  # 12 frozen weights
    row = [line for line in capsys.readouterr().out.splitlines() if "Linear-1" in line][0]
    assert row.split()[-2:] == ["15", "3"]  # Param #, Trainable #


def test_model_summary_uses_input_spec(capsys):
    model = pdx.Model(_pdx_lenet(), inputs=[pdx.static.InputSpec([None, 1, 28, 28], "float32")])
    assert model.summary()["total_params"] == 61610  # 60 + 2416 + 48120 + 10164 + 850


def test_flops_counts_xla_operations():
    # Linear: 2*B*in*out multiply-adds + B*out bias adds.
    assert pdx.flops(nn.Linear(16, 8), [4, 16]) == 2 * 4 * 16 * 8 + 4 * 8
    conv = nn.Conv2D(3, 8, 3, bias_attr=False)
    n = pdx.flops(conv, [1, 3, 10, 10])
    assert n == 2 * 8 * 8 * 8 * (3 * 3 * 3)  # out pixels * out channels * kernel volume * 2


def test_flops_print_detail(capsys):
    total = pdx.flops(_pdx_lenet(), [1, 1, 28, 28], print_detail=True)
    out = capsys.readouterr().out
    assert "Total FLOPs" in out and "Conv2D" in out and total > 2 * (400 * 120 + 120 * 84 + 84 * 10)


def test_profiler_scheduler_matches_paddle(paddle):
    ours = pdx.profiler.make_scheduler(closed=1, ready=1, record=2, repeat=2, skip_first=1)
    theirs = paddle.profiler.make_scheduler(closed=1, ready=1, record=2, repeat=2, skip_first=1)
    assert [ours(i).name for i in range(12)] == [theirs(i).name for i in range(12)]


def test_profiler_writes_traces_for_recorded_steps(tmp_path):
    prof = pdx.profiler.Profiler(scheduler=pdx.profiler.make_scheduler(closed=1, ready=0, record=1, repeat=2),
                                 on_trace_ready=pdx.profiler.export_chrome_tracing(str(tmp_path)))
    f = jax.jit(lambda x: jnp.tanh(x @ x))
    with prof:
        for _ in range(4):
            with pdx.profiler.RecordEvent("train_step"):
                f(jnp.ones((8, 8))).block_until_ready()
            prof.step()
    runs = glob.glob(str(tmp_path / "plugins" / "profile" / "*"))
    assert len(prof.trace_dirs) == 2 and len(runs) >= 1
    assert glob.glob(str(tmp_path / "plugins" / "profile" / "*" / "*.xplane.pb"))
    assert "steps/s" in prof.step_info()


def test_lr_scheduler_callback_steps_by_step_and_epoch(paddle):
    def fit(by_step):
        net = nn.Linear(2, 1)
        sched = pdx.optimizer.lr.StepDecay(0.1, step_size=2, gamma=0.5)
        model = pdx.Model(net)
        model.prepare(pdx.optimizer.SGD(sched, parameters=net), F.mse_loss)
        x, y = np.ones((12, 2), np.float32), np.zeros((12, 1), np.float32)
        cb = pdx.callbacks.LRScheduler(by_step=by_step, by_epoch=not by_step)
        model.fit((x, y), batch_size=4, epochs=2, verbose=0, callbacks=[cb])
        return sched.get_lr(), float(model.train_state.lr)

    ref = paddle.optimizer.lr.StepDecay(0.1, step_size=2, gamma=0.5)
    for _ in range(6):
        ref.step()
    last, used = fit(by_step=True)  # 6 batches -> 6 scheduler steps
    assert last == pytest.approx(ref.get_lr())
    assert used == pytest.approx(0.1 * 0.5 ** (5 // 2))  # the 6th update used the lr after 5 scheduler steps
    ref2 = paddle.optimizer.lr.StepDecay(0.1, step_size=2, gamma=0.5)
    ref2.step()
    ref2.step()
    assert fit(by_step=False)[0] == pytest.approx(ref2.get_lr())


def test_reduce_lr_on_plateau_lowers_a_float_lr():
    net = nn.Linear(2, 1)
    model = pdx.Model(net)
    opt = pdx.optimizer.SGD(1e-9, parameters=net)  # far too small to improve: the loss plateaus
    model.prepare(opt, F.mse_loss)
    x, y = np.ones((8, 2), np.float32), np.full((8, 1), 3.0, np.float32)
    cb = pdx.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, verbose=0)
    model.fit((x, y), (x, y), batch_size=8, epochs=3, verbose=0, callbacks=[cb])
    assert opt.get_lr() == pytest.approx(1e-9 * 0.5 ** 2)  # evals 2 and 3 did not improve


def test_auto_cast_policy_and_lists():
    net = nn.Linear(4, 2)
    x = jnp.ones((1, 4))
    with pdx.amp.auto_cast(dtype="bfloat16"):
        assert net(x).dtype == jnp.bfloat16
        assert F.softmax(x).dtype == jnp.float32  # not a white-list op at O1
    with pdx.amp.auto_cast(custom_black_list=["linear"]):
        assert net(x).dtype == jnp.float32
    assert net(x).dtype == jnp.float32
    with pytest.raises(ValueError, match="level"):
        with pdx.amp.auto_cast(level="O3"):
            pass
    with pytest.raises(ValueError, match="both"):
        with pdx.amp.auto_cast(custom_white_list=["exp"], custom_black_list=["exp"]):
            pass


def test_decorate_o2_keeps_norms_and_master_weights():
    net = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4))
    opt = pdx.optimizer.SGD(0.1, parameters=net)
    w32 = np.asarray(net[0].weight[...]).copy()
    net, opt = pdx.amp.decorate(net, opt, level="O2", dtype="bfloat16")
    assert net[0].weight[...].dtype == jnp.bfloat16 and net[1].weight[...].dtype == jnp.float32
    g = {"0.weight": jnp.full((4, 4), 1e-3), "0.bias": jnp.zeros(4), "1.weight": jnp.zeros(4), "1.bias": jnp.zeros(4)}
    for _ in range(10):
        opt.step(g)
    # 10 updates of 1e-4 are kept by the float32 master even where bf16 rounding would drop each one.
    master = np.asarray(opt.state_dict()["master_weights/0.weight"])
    np.testing.assert_allclose(master, w32 - 10 * 1e-4, rtol=1e-5, atol=1e-6)


def test_grad_scaler_rule_matches_paddle_update_loss_scaling():
    """The dynamic rule against a direct transcription of Paddle's update_loss_scaling."""
    scaler = pdx.amp.GradScaler(init_loss_scaling=8.0, incr_every_n_steps=3, decr_every_n_nan_or_inf=2)
    state = scaler.init()
    scale, good, bad = 8.0, 0, 0
    pattern = [True, True, True, False, False, True, False, True, True, True, False, False, False, False, False]
    for finite in pattern:
        state = scaler.update(state, jnp.asarray(finite))
        if finite:
            good, bad = good + 1, 0
            if good == 3:
                scale, good = scale * 2.0, 0
        else:
            good, bad = 0, bad + 1
            if bad == 2:
                scale, bad = max(scale * 0.5, 1.0), 0
        assert (float(state.scale), int(state.good_steps), int(state.bad_steps)) == (scale, good, bad)
    with pytest.raises(ValueError, match="decr_ratio"):
        pdx.amp.GradScaler(decr_ratio=2.0)


def test_bad_arguments_name_the_fix():
    model = pdx.Model(nn.Linear(2, 1))
    with pytest.raises(RuntimeError, match="prepare"):
        model.fit((np.ones((4, 2), np.float32), np.ones((4, 1), np.float32)))
    with pytest.raises(TypeError, match="pdx.metric.Metric"):
        model.prepare(metrics=["acc"])
    with pytest.raises(ValueError, match="amp_configs"):
        model.prepare(amp_configs={"levle": "O1"})
    with pytest.raises(TypeError, match="pdx.nn.Layer"):
        pdx.Model(object())
    model.prepare(pdx.optimizer.SGD(0.1, parameters=model.network), F.mse_loss)
    with pytest.raises(ValueError, match="first .sample. dimension"):
        model.fit((np.ones((4, 2), np.float32), np.ones((3, 1), np.float32)), verbose=0)
    with pytest.raises(pdx.hapi.ModelFileError, match="Model.save"):
        model.load(os.path.join("/nonexistent", "m"))
