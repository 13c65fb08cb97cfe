"""Time-series classification with a temporal convolutional network: causal
dilated Conv1D blocks (F.pad on the left, weight_norm on each conv),
residual connections, a global average pool, F.one_hot targets smoothed with
F.label_smooth and a soft-label F.cross_entropy; CosineAnnealingDecay on
Adam with a weight decay."""
import json

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle.nn.utils import weight_norm

paddle.set_device("cpu")
N_CLASSES, LENGTH = 3, 32


def make_series(rng, n):
    labels = rng.randint(0, N_CLASSES, size=n)
    t = np.arange(LENGTH)
    freq = np.array([0.1, 0.25, 0.45])[labels]
    x = np.sin(2 * np.pi * freq[:, None] * t + rng.uniform(0, 6, size=(n, 1))) + 0.3 * rng.randn(n, LENGTH)
    return x[:, None].astype("float32"), labels.astype("int64")


class CausalBlock(nn.Layer):
    def __init__(self, cin, cout, dilation):
        super().__init__()
        self.pad = 2 * dilation
        self.conv = weight_norm(nn.Conv1D(cin, cout, 3, dilation=dilation))
        self.skip = nn.Conv1D(cin, cout, 1) if cin != cout else None

    def forward(self, x):
        y = F.relu(self.conv(F.pad(x, [self.pad, 0], data_format="NCL")))
        return y + (self.skip(x) if self.skip is not None else x)


class TCN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(CausalBlock(1, 8, 1), CausalBlock(8, 8, 2), CausalBlock(8, 8, 4))
        self.fc = nn.Linear(8, N_CLASSES)

    def forward(self, x):
        return self.fc(self.blocks(x).mean(axis=2))


def loss_fn(model, x, y):
    soft = F.label_smooth(F.one_hot(y, N_CLASSES), epsilon=0.1)
    return F.cross_entropy(model(x), soft, soft_label=True)


model = TCN()
rng = np.random.RandomState(53)
for name, param in model.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.3 + (1.0 if name.endswith("weight_g") else 0.0)).astype("float32"))
scheduler = paddle.optimizer.lr.CosineAnnealingDecay(learning_rate=0.01, T_max=20)
opt = paddle.optimizer.Adam(learning_rate=scheduler, parameters=model.parameters(), weight_decay=1e-4)

losses = []
for step in range(20):
    x, y = make_series(rng, 32)
    loss = loss_fn(model, paddle.to_tensor(x), paddle.to_tensor(y))
    loss.backward()
    opt.step()
    opt.clear_grad()
    scheduler.step()
    losses.append(float(loss))

model.eval()
x, y = make_series(np.random.RandomState(5), 90)
with paddle.no_grad():
    logits = model(paddle.to_tensor(x))
print(json.dumps({
    "param_names": [name for name, _ in model.named_parameters()],
    "losses": losses,
    "accuracy": float((logits.argmax(axis=1).numpy() == y).mean()),
    "logits_head": logits[:3].numpy().tolist(),
}))
