"""PointNet-style point-cloud classification on generated shapes (sphere,
cube surface, cylinder): a shared per-point MLP as Conv1D with kernel 1 and
BatchNorm1D, a max pool over the points, a classifier with Dropout, trained
with Momentum and a CrossEntropyLoss with label smoothing."""
import json

import numpy as np
import pdx as paddle
import pdx.nn as nn
import pdx.nn.functional as F
from pdx.io import DataLoader, Dataset

paddle.set_device("cpu")
N_POINTS = 64


def make_shape(kind, rng):
    if kind == 0:
        p = rng.randn(N_POINTS, 3)
        p /= np.linalg.norm(p, axis=1, keepdims=True)
    elif kind == 1:
        p = rng.uniform(-1, 1, size=(N_POINTS, 3))
        face = rng.randint(0, 3, size=N_POINTS)
        p[np.arange(N_POINTS), face] = np.sign(p[np.arange(N_POINTS), face])
    else:
        angle = rng.uniform(0, 2 * np.pi, size=N_POINTS)
        p = np.stack([np.cos(angle), np.sin(angle), rng.uniform(-1, 1, size=N_POINTS)], axis=1)
    return (p * rng.uniform(0.8, 1.2) + 0.05 * rng.randn(N_POINTS, 3)).astype("float32")


class ShapeDataset(Dataset):
    def __init__(self, n, seed):
        rng = np.random.RandomState(seed)
        self.labels = rng.randint(0, 3, size=n)
        self.points = np.stack([make_shape(k, rng) for k in self.labels])

    def __getitem__(self, idx):
        return self.points[idx].T, np.array(self.labels[idx], dtype="int64")

    def __len__(self):
        return len(self.labels)


class PointNet(nn.Layer):
    def __init__(self, num_classes=3):
        super().__init__()
        self.mlp = nn.Sequential(nn.Conv1D(3, 16, 1), nn.BatchNorm1D(16), nn.ReLU(),
                                 nn.Conv1D(16, 32, 1), nn.BatchNorm1D(32), nn.ReLU())
        self.classifier = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Dropout(0.0), nn.Linear(16, num_classes))

    def forward(self, x):
        feats = self.mlp(x)
        pooled = paddle.max(feats, axis=2)
        return self.classifier(pooled)


model = PointNet()
rng = np.random.RandomState(12)
for name, param in model.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.3).astype("float32"))
opt = paddle.optimizer.Momentum(learning_rate=0.05, momentum=0.9, parameters=model.parameters())
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
loader = DataLoader(ShapeDataset(192, 0), batch_size=32, shuffle=False)


def loss_fn(model, points, labels):
    return criterion(model(points), labels)


losses = []
for epoch in range(3):
    model.train()
    for points, labels in loader:
        loss, grads = paddle.value_and_grad(loss_fn)(model, points, labels)
        opt.step(grads)
        opt.clear_grad()
        losses.append(float(loss))

model.eval()
test = ShapeDataset(60, 1)
with paddle.no_grad():
    logits = model(paddle.to_tensor(test.points.transpose(0, 2, 1)))
    pred = logits.argmax(axis=1)
    acc = float((pred.numpy() == test.labels).mean())
print(json.dumps({
    "losses": losses,
    "accuracy": acc,
    "pred": pred.numpy().tolist(),
    "bn_mean": model.mlp[1]._mean.numpy().tolist(),
    "logits_head": logits[:3].numpy().tolist(),
}))
