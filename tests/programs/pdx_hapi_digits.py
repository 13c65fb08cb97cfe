"""High-level API: `paddle.Model` with prepare/fit/evaluate/predict on a
`paddle.io.Dataset` of scikit-learn's digits."""
import json

import numpy as np
import pdx as paddle
import pdx.nn as nn
from sklearn.datasets import load_digits

paddle.set_device("cpu")


class DigitsDataset(paddle.io.Dataset):
    def __init__(self, mode="train"):
        super().__init__()
        digits = load_digits()
        x = (digits.data / 16.0).astype("float32")
        y = digits.target.astype("int64").reshape([-1, 1])
        sl = slice(0, 1200) if mode == "train" else slice(1200, None)
        self.x, self.y = x[sl], y[sl]

    def __getitem__(self, idx):
        return self.x[idx], self.y[idx]

    def __len__(self):
        return len(self.x)


train_dataset = DigitsDataset("train")
test_dataset = DigitsDataset("test")
net = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
rng = np.random.RandomState(1)
state = net.state_dict()
net.set_state_dict({k: (rng.randn(*v.shape) * 0.1).astype("float32") for k, v in sorted(state.items())})

model = paddle.Model(net)
optim = paddle.optimizer.Adam(learning_rate=0.005, parameters=model.parameters())
model.prepare(optim, nn.CrossEntropyLoss(), paddle.metric.Accuracy())
model.fit(train_dataset, epochs=3, batch_size=100, shuffle=False, verbose=0)
result = model.evaluate(test_dataset, batch_size=100, verbose=0)
print(result)
preds = model.predict(test_dataset, batch_size=100, stack_outputs=True, verbose=0)
logits = np.asarray(preds[0])
print(json.dumps({
    "eval_loss": float(np.ravel(result["loss"])[0]),
    "eval_acc": float(result["acc"]),
    "pred_shape": list(logits.shape),
    "pred_classes": logits.argmax(-1)[:40].tolist(),
    "pred_loss": float(np.mean(np.log(np.exp(logits).sum(-1)) - logits[np.arange(len(logits)), test_dataset.y[:, 0]])),
}))
