"""A mixture density network on a generated one-to-many curve: the network
outputs mixture logits, means and softplus scales; the negative
log-likelihood uses paddle.distribution.Normal.log_prob and
paddle.logsumexp. An exponential moving average of the weights is kept by
hand with set_value and evaluated in a copy built with copy.deepcopy."""
import copy
import json

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle.distribution import Normal

paddle.set_device("cpu")
K = 3
rng = np.random.RandomState(43)
y_np = rng.uniform(-1, 1, size=(400, 1)).astype("float32")
x_np = (np.sin(3 * y_np) + 0.3 * y_np + 0.05 * rng.randn(400, 1)).astype("float32")


class MDN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(1, 32), nn.Tanh())
        self.pi = nn.Linear(32, K)
        self.mu = nn.Linear(32, K)
        self.sigma = nn.Linear(32, K)

    def forward(self, x):
        h = self.body(x)
        return F.log_softmax(self.pi(h), axis=-1), self.mu(h), F.softplus(self.sigma(h)) + 1e-3


def mdn_nll(model, x, y):
    log_pi, mu, sigma = model(x)
    log_prob = Normal(mu, sigma).log_prob(y.expand_as(mu))
    return -paddle.logsumexp(log_pi + log_prob, axis=-1).mean()


model = MDN()
for name, param in model.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.5).astype("float32"))
ema = copy.deepcopy(model)
opt = paddle.optimizer.Adam(learning_rate=0.01, parameters=model.parameters())

losses = []
for epoch in range(4):
    for i in range(0, 400, 50):
        x, y = paddle.to_tensor(x_np[i:i + 50]), paddle.to_tensor(y_np[i:i + 50])
        loss = mdn_nll(model, x, y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
        with paddle.no_grad():
            for p, e in zip(model.parameters(), ema.parameters()):
                e.set_value(0.9 * e + 0.1 * p)

grid = paddle.to_tensor(np.linspace(-1, 1, 5, dtype="float32").reshape([-1, 1]))
with paddle.no_grad():
    log_pi, mu, sigma = model(grid)
    ema_nll = float(mdn_nll(ema, paddle.to_tensor(x_np), paddle.to_tensor(y_np)))
    nll = float(mdn_nll(model, paddle.to_tensor(x_np), paddle.to_tensor(y_np)))
print(json.dumps({
    "losses": losses,
    "nll": nll,
    "ema_nll": ema_nll,
    "pi": log_pi.exp().numpy().tolist(),
    "mu": mu.numpy().tolist(),
    "sigma_mean": float(sigma.mean()),
}))
