"""Eager training loop: an MLP on scikit-learn's digits with Adam, loss printed
with `.numpy()`, evaluation under `paddle.no_grad()`."""
import json

import numpy as np
import pdx as paddle
import pdx.nn as nn
import pdx.nn.functional as F
from sklearn.datasets import load_digits

paddle.set_device("cpu")
digits = load_digits()
x_all = (digits.data / 16.0).astype("float32")
y_all = digits.target.astype("int64")
x_train, y_train = paddle.to_tensor(x_all[:1200]), paddle.to_tensor(y_all[:1200])
x_test, y_test = paddle.to_tensor(x_all[1200:]), paddle.to_tensor(y_all[1200:])


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = x.reshape([-1, 8, 8]).flatten(1)
        return self.fc2(F.relu(self.fc1(x)))


model = MLP()
# load "pretrained" weights
rng = np.random.RandomState(0)
state = model.state_dict()
model.set_state_dict({k: (rng.randn(*v.shape) * 0.1).astype("float32") for k, v in sorted(state.items())})
opt = paddle.optimizer.Adam(learning_rate=0.01, parameters=model.parameters())


def loss_fn(model, x, y):
    return F.cross_entropy(model(x), y)


losses = []
model.train()
for epoch in range(3):
    for i in range(0, 1200, 200):
        x, y = x_train[i:i + 200], y_train[i:i + 200]
        loss, grads = paddle.value_and_grad(loss_fn)(model, x, y)
        opt.step(grads)
        opt.clear_grad()
        losses.append(float(loss.numpy()))
    print("epoch", epoch, "loss", loss.numpy())

model.eval()
with paddle.no_grad():
    logits = model(x_test)
    pred = logits.argmax(axis=1)
    correct = paddle.equal(pred, y_test).astype("float32")
    acc = correct.mean()
    count = correct.sum(keepdim=True)
    top = F.softmax(logits, axis=-1).max(axis=1).unsqueeze(1)
print("test accuracy", acc.numpy())
print(json.dumps({
    "losses": losses,
    "accuracy": float(acc),
    "correct": count.numpy().tolist(),
    "top_shape": list(top.shape),
    "top_sum": float(top.sum()),
    "pred_head": pred[:20].numpy().tolist(),
}))
