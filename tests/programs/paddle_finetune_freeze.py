"""Fine-tuning with a frozen backbone: `param.trainable = False` on the
backbone's parameters, only the head is updated."""
import json

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from sklearn.datasets import load_digits

paddle.set_device("cpu")
digits = load_digits()
x = paddle.to_tensor((digits.data[:400] / 16.0).astype("float32"))
y = paddle.to_tensor(digits.target[:400].astype("int64"))

model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
rng = np.random.RandomState(10)
state = model.state_dict()
model.set_state_dict({k: (rng.randn(*v.shape) * 0.2).astype("float32") for k, v in sorted(state.items())})
backbone_before = model[0].weight.numpy().copy()
for param in model[0].parameters():
    param.trainable = False
opt = paddle.optimizer.SGD(learning_rate=0.5, parameters=model.parameters())


def loss_fn(model, x, y):
    return F.cross_entropy(model(x), y)


losses = []
for step in range(5):
    loss = loss_fn(model, x, y)
    loss.backward()
    opt.step()
    opt.clear_grad()
    losses.append(float(loss))
print(json.dumps({
    "trainable": [p.trainable for p in model.parameters()],
    "backbone_unchanged": bool(np.array_equal(model[0].weight.numpy(), backbone_before)),
    "losses": losses,
}))
