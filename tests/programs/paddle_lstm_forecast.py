"""Time-series forecasting: windows of a generated noisy sine in a
paddle.io.Dataset, an nn.LSTM (two layers) reading each window and a Linear
head predicting the next value, MSE loss, Adam with a StepDecay schedule
stepped per epoch, then an autoregressive rollout."""
import json

import numpy as np
import paddle
import paddle.nn as nn
from paddle.io import DataLoader, Dataset

paddle.set_device("cpu")
WINDOW = 12
t = np.arange(400, dtype="float32")
series = (np.sin(0.15 * t) + 0.5 * np.sin(0.05 * t) + 0.05 * np.random.RandomState(0).randn(400)).astype("float32")


class WindowDataset(Dataset):
    def __init__(self, data):
        self.data = data

    def __getitem__(self, idx):
        return self.data[idx:idx + WINDOW, None], self.data[idx + WINDOW:idx + WINDOW + 1]

    def __len__(self):
        return len(self.data) - WINDOW


class Forecaster(nn.Layer):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(input_size=1, hidden_size=16, num_layers=2)
        self.head = nn.Linear(16, 1)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return self.head(out[:, -1])


model = Forecaster()
rng = np.random.RandomState(6)
for name, param in model.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.25).astype("float32"))
scheduler = paddle.optimizer.lr.StepDecay(learning_rate=0.01, step_size=2, gamma=0.5)
opt = paddle.optimizer.Adam(learning_rate=scheduler, parameters=model.parameters())
mse = nn.MSELoss()
loader = DataLoader(WindowDataset(series[:300]), batch_size=48, shuffle=False, drop_last=True)


def loss_fn(model, x, y):
    return mse(model(x), y)


losses, lrs = [], []
for epoch in range(4):
    model.train()
    for x, y in loader:
        loss = loss_fn(model, x, y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    lrs.append(opt.get_lr())
    scheduler.step()

model.eval()
with paddle.no_grad():
    test = WindowDataset(series[300:])
    x = paddle.to_tensor(np.stack([test[i][0] for i in range(len(test))]))
    y = paddle.to_tensor(np.stack([test[i][1] for i in range(len(test))]))
    test_mse = float(mse(model(x), y))
    window = paddle.to_tensor(series[300:300 + WINDOW].reshape(1, WINDOW, 1))
    rollout = []
    for _ in range(8):
        nxt = model(window)
        rollout.append(float(nxt[0, 0]))
        window = paddle.concat([window[:, 1:], nxt.unsqueeze(1)], axis=1)
print(json.dumps({"losses": losses, "lrs": lrs, "test_mse": test_mse, "rollout": rollout}))
