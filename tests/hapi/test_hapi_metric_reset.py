"""When pdx.Model resets its metrics, against paddle.Model: at the end of each
fit epoch and evaluate loop (Paddle's `_run_one_epoch`), never at the start, so
what train_batch / eval_batch accumulated before counts in the next loop."""

import numpy as np

import pdx


def _pair(lib, w, b, lr):
    net = lib.nn.Linear(4, 3)
    net.weight.set_value(w)
    net.bias.set_value(b)
    model, metric = lib.Model(net), lib.metric.Accuracy()
    model.prepare(lib.optimizer.SGD(learning_rate=lr, parameters=net.parameters()), lib.nn.CrossEntropyLoss(), metric)
    return model, metric


class _Data:
    def __init__(self, lib, x, y):
        self.lib, self.x, self.y = lib, x, y

    def dataset(self):
        lib, x, y = self.lib, self.x, self.y

        class D(lib.io.Dataset):
            def __getitem__(self, i):
                return x[i], y[i]

            def __len__(self):
                return len(x)

        return D()


def _run(lib, w, b, x, y, lr):
    model, metric = _pair(lib, w, b, lr)
    model.train_batch([x[:8]], [y[:8]])
    model.eval_batch([x[8:16]], [y[8:16]])
    evaluated = model.evaluate(_Data(lib, x[16:], y[16:]).dataset(), batch_size=8, verbose=0)
    after_evaluate = metric.accumulate()
    model.train_batch([x[:8]], [y[:8]])
    seen = []

    class Log(lib.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.append(float(logs["acc"]))

    model.fit(_Data(lib, x[16:], y[16:]).dataset(), batch_size=8, epochs=2, shuffle=False, verbose=0,
              callbacks=[Log()])
    return float(evaluated["acc"]), after_evaluate, seen, metric.accumulate()


def test_metrics_reset_at_the_end_of_each_loop_as_in_paddle(paddle):
    r = np.random.RandomState(0)
    w, b = (r.randn(4, 3) * 0.5).astype("float32"), (r.randn(3) * 0.1).astype("float32")
    x = r.randn(40, 4).astype("float32")
    y = r.randint(0, 3, size=(40, 1)).astype("int64")
    ours = _run(pdx, w, b, x, y, 0.0)
    theirs = _run(paddle, w, b, x, y, 0.0)
    # lr 0 keeps the weights fixed, so accuracies are counts of the same predictions: the values
    # include the earlier train_batch / eval_batch batches (8 + 8 before evaluate's 24)
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1] == 0.0
    assert ours[2] == theirs[2]
    assert ours[3] == theirs[3] == 0.0
    plain = _run(pdx, w, b, x, y, 0.0)
    model, _ = _pair(pdx, w, b, 0.0)
    alone = model.evaluate(_Data(pdx, x[16:], y[16:]).dataset(), batch_size=8, verbose=0)["acc"]
    assert plain[0] != alone  # the accumulated batches do change the value here
