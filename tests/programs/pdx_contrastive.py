"""Contrastive representation learning (SimCLR-style) on scikit-learn's
digits: two augmented views per image made with numpy (shift + noise), an
encoder with a projection head, F.normalize, the NT-Xent loss built from a
similarity matrix with masked_fill on the diagonal, then a linear probe
trained with SGD on the frozen features."""
import json

import numpy as np
import pdx as paddle
import pdx.nn as nn
import pdx.nn.functional as F
from sklearn.datasets import load_digits

paddle.set_device("cpu")
TAU, BATCH = 0.5, 64
digits = load_digits()
images = (digits.images / 16.0).astype("float32")
labels = digits.target.astype("int64")


def augment(batch, rng):
    shifted = np.stack([np.roll(img, rng.randint(-1, 2), axis=rng.randint(0, 2)) for img in batch])
    return (shifted + 0.1 * rng.randn(*shifted.shape)).astype("float32")[:, None]


class Encoder(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2D(1, 8, 3, padding=1), nn.ReLU(), nn.AvgPool2D(2),
                                  nn.Conv2D(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2D(1), nn.Flatten())
        self.projector = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 8))

    def forward(self, x):
        h = self.conv(x)
        return h, self.projector(h)


def nt_xent(model, view1, view2):
    _, z1 = model(view1)
    _, z2 = model(view2)
    z = F.normalize(paddle.concat([z1, z2], axis=0), axis=1)
    sim = paddle.matmul(z, z, transpose_y=True) / TAU
    n = z1.shape[0]
    sim = sim.masked_fill(paddle.eye(2 * n).astype("bool"), -1e9)
    targets = paddle.concat([paddle.arange(n, 2 * n), paddle.arange(0, n)])
    return F.cross_entropy(sim, targets)


model = Encoder()
rng = np.random.RandomState(33)
for name, param in model.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.3).astype("float32"))
opt = paddle.optimizer.Adam(learning_rate=0.01, parameters=model.parameters())

losses = []
for step in range(10):
    batch = images[step * BATCH:(step + 1) * BATCH]
    view1, view2 = paddle.to_tensor(augment(batch, rng)), paddle.to_tensor(augment(batch, rng))
    loss, grads = paddle.value_and_grad(nt_xent)(model, view1, view2)
    opt.step(grads)
    opt.clear_grad()
    losses.append(float(loss))

model.eval()
with paddle.no_grad():
    feats, _ = model(paddle.to_tensor(images[:600, None]))
    test_feats, _ = model(paddle.to_tensor(images[600:900, None]))
probe = nn.Linear(16, 10)
probe.weight.set_value(np.zeros((16, 10), dtype="float32"))
probe.bias.set_value(np.zeros(10, dtype="float32"))
probe_opt = paddle.optimizer.SGD(learning_rate=0.5, parameters=probe.parameters())


def probe_loss(probe, feats, y):
    return F.cross_entropy(probe(feats), y)


y_train = paddle.to_tensor(labels[:600])
probe_losses = []
for step in range(20):
    loss, grads = paddle.value_and_grad(probe_loss)(probe, feats, y_train)
    probe_opt.step(grads)
    probe_opt.clear_grad()
    probe_losses.append(float(loss))
with paddle.no_grad():
    acc = float((probe(test_feats).argmax(axis=1).numpy() == labels[600:900]).mean())
print(json.dumps({"losses": losses, "probe_losses": probe_losses, "probe_accuracy": acc,
                  "feat_mean": feats.mean(axis=0)[:4].numpy().tolist()}))
