"""Paddle program forms around hapi, each checked against paddle 3.3.1:
ProgressBar's output, one callback object (not a list) in fit, inputs counted
from forward's signature, Model.load with the .pdparams suffix, summary with
-1/None batch dims, and every public paddle.Model method present."""

import io
import sys

import numpy as np
import pytest

import pdx
from pdx.hapi.progressbar import ProgressBar


def _strip_rate(text):
    return [line.rsplit(" - ", 1)[0] for line in text.replace("\b", "").replace("\r", "\n").splitlines() if line.strip()]


def test_progressbar_prints_as_paddle(paddle, capsys):
    from paddle.hapi.progressbar import ProgressBar as PaddleBar

    steps = [(1, [("loss", 0.5), ("acc", [0.25, 1e-5])]), (3, [("loss", np.float32(0.125))]), (4, [("loss", 2.0)])]
    for verbose in (1, 2):
        # Paddle's default `file=sys.stdout` is bound when paddle.hapi is first imported (maybe under
        # another test's capture): pass this test's stdout
        ref = PaddleBar(num=4, verbose=verbose, width=20, file=sys.stdout)
        ref._dynamic_display = True
        for n, values in steps:
            ref.update(n, list(values))
        expected = _strip_rate(capsys.readouterr().out)
        out = io.StringIO()
        bar = ProgressBar(num=4, verbose=verbose, width=20, file=out)
        bar._dynamic_display = True
        for n, values in steps:
            bar.update(n, list(values))
        got = _strip_rate(out.getvalue())
        assert [g.split(" - ETA")[0] for g in got] == [e.split(" - ETA")[0] for e in expected], verbose
    with pytest.raises(TypeError, match="num"):
        ProgressBar(num=0)


class _Scaled(pdx.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = pdx.nn.Linear(4, 2)

    def forward(self, x, scale=None):  # two inputs for Paddle's count, the second with a default
        return self.fc(x) * scale


class _Count(pdx.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.epochs = 0

    def on_epoch_end(self, epoch, logs=None):
        self.epochs += 1


def test_model_forms(paddle, tmp_path, rng):
    names = {n for n in dir(paddle.Model) if not n.startswith("_")}
    assert not sorted(n for n in names if not hasattr(pdx.Model, n))
    x = rng.standard_normal((8, 4)).astype(np.float32)
    s = np.full((8, 1), 2.0, np.float32)
    y = rng.integers(0, 2, (8, 1)).astype(np.int32)
    data = pdx.io.TensorDataset([x, s, y])
    model = pdx.Model(_Scaled())
    model.prepare(pdx.optimizer.SGD(0.1, parameters=model.parameters()), pdx.nn.CrossEntropyLoss())
    counter = _Count()
    model.fit(data, batch_size=4, epochs=2, verbose=0, callbacks=counter)  # one callback, not a list
    assert counter.epochs == 2
    model.fit(data, batch_size=4, epochs=1, verbose=0, callbacks=pdx.callbacks.ProgBarLogger())
    assert model._n_inputs(3) == 2  # x and scale are inputs, y the label (Paddle: getfullargspec(forward).args)
    out = model.predict_batch([x, s])[0]
    np.testing.assert_allclose(out, np.asarray(model.network.fc(x)) * 2.0, rtol=1e-5, atol=1e-6)
    path = str(tmp_path / "m")
    model.save(path)
    fresh = pdx.Model(_Scaled())
    fresh.prepare(pdx.optimizer.SGD(0.1, parameters=fresh.parameters()), pdx.nn.CrossEntropyLoss())
    fresh.load(path + ".pdparams")
    np.testing.assert_array_equal(np.asarray(fresh.network.fc.weight[...]), np.asarray(model.network.fc.weight[...]))


def test_summary_unknown_batch_dims_as_paddle(paddle):
    ref_net = paddle.nn.Sequential(paddle.nn.Linear(4, 3), paddle.nn.ReLU(), paddle.nn.Linear(3, 2))
    net = pdx.nn.Sequential(pdx.nn.Linear(4, 3), pdx.nn.ReLU(), pdx.nn.Linear(3, 2))
    for size in ((-1, 4), (None, 4), [(-1, 4)]):
        ref = paddle.summary(ref_net, size)
        got = pdx.summary(net, size)
        assert int(got["total_params"]) == int(ref["total_params"]) == 23
        assert int(pdx.Model(net).summary(size)["trainable_params"]) == int(ref["trainable_params"])
    for size in ((-1, -1), (None, 4, None)):
        with pytest.raises(ValueError, match="only the dim of batch_size"):
            paddle.summary(ref_net, size)
        with pytest.raises(ValueError, match="only the dim of batch_size"):
            pdx.summary(net, size)
