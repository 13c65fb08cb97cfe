"""paddle.Model with user-written pieces: a paddle.metric.Metric subclass
(mean absolute error), a paddle.callbacks.Callback subclass recording the
logs of every epoch and batch, inputs/labels as paddle.static.InputSpec, a
regression loss layer of our own, paddle.summary, Model.train_batch /
eval_batch and Model.predict with stack_outputs."""
import json

import numpy as np
import paddle
import paddle.nn as nn
from paddle.static import InputSpec

paddle.set_device("cpu")
rng = np.random.RandomState(19)
w_true = rng.randn(6, 1).astype("float32")
x_all = rng.randn(300, 6).astype("float32")
y_all = (x_all @ w_true + 0.1 * np.sin(3 * x_all[:, :1])).astype("float32")


class RegressionDataset(paddle.io.Dataset):
    def __init__(self, x, y):
        super().__init__()
        self.x, self.y = x, y

    def __getitem__(self, idx):
        return self.x[idx], self.y[idx]

    def __len__(self):
        return len(self.x)


class MAE(paddle.metric.Metric):
    def __init__(self, name="mae"):
        super().__init__()
        self._name = name
        self.reset()

    def reset(self):
        self.total, self.count = 0.0, 0

    def update(self, preds, labels):
        preds, labels = np.asarray(preds), np.asarray(labels)
        self.total += float(np.abs(preds - labels).sum())
        self.count += preds.shape[0]

    def accumulate(self):
        return self.total / max(self.count, 1)

    def name(self):
        return self._name


class LogRecorder(paddle.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.epochs, self.batches = [], 0

    def on_train_batch_end(self, step, logs=None):
        self.batches += 1

    def on_epoch_end(self, epoch, logs=None):
        self.epochs.append([epoch, float(np.asarray(logs["loss"]).ravel()[0]), float(logs["mae"])])


class HuberLoss(nn.Layer):
    def __init__(self, delta=0.5):
        super().__init__()
        self.delta = delta

    def forward(self, pred, label):
        return nn.functional.smooth_l1_loss(pred, label, delta=self.delta)


net = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))
for name, param in net.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.3).astype("float32"))
info = paddle.summary(net, (1, 6))
model = paddle.Model(net, inputs=[InputSpec([None, 6], "float32", "x")], labels=[InputSpec([None, 1], "float32", "y")])
model.prepare(paddle.optimizer.RMSProp(learning_rate=0.01, parameters=net.parameters()), HuberLoss(), MAE())
recorder = LogRecorder()
model.fit(RegressionDataset(x_all[:240], y_all[:240]), epochs=3, batch_size=40, shuffle=False, verbose=0,
          callbacks=[recorder])
batch_loss = model.train_batch([x_all[:40]], [y_all[:40]])
eval_out = model.eval_batch([x_all[240:280]], [y_all[240:280]])
result = model.evaluate(RegressionDataset(x_all[240:], y_all[240:]), batch_size=60, verbose=0)
preds = model.predict(RegressionDataset(x_all[240:], y_all[240:]), batch_size=25, stack_outputs=True, verbose=0)
print(json.dumps({
    "summary": {k: int(v) for k, v in info.items()},
    "epochs": recorder.epochs,
    "batches": recorder.batches,
    "batch_loss": float(np.asarray(batch_loss[0]).ravel()[0]),
    "eval_mae": float(result["mae"]),
    "pred_shape": list(np.asarray(preds[0]).shape),
    "pred_head": np.asarray(preds[0])[:5, 0].tolist(),
}))
