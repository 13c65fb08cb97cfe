"""A variational autoencoder on scikit-learn's digits: an encoder giving mean
and log-variance, the reparameterisation trick (the noise comes from numpy so
both runs see the same draws), a BCE reconstruction term plus the KL term."""
import json

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from sklearn.datasets import load_digits

paddle.set_device("cpu")
LATENT = 4
digits = load_digits()
images = (digits.data[:512] / 16.0).astype("float32")


class VAE(nn.Layer):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(64, 32), nn.Tanh())
        self.fc_mu = nn.Linear(32, LATENT)
        self.fc_logvar = nn.Linear(32, LATENT)
        self.decoder = nn.Sequential(nn.Linear(LATENT, 32), nn.Tanh(), nn.Linear(32, 64))

    def encode(self, x):
        h = self.encoder(x)
        return self.fc_mu(h), self.fc_logvar(h)

    def reparameterize(self, mu, logvar, eps):
        std = paddle.exp(0.5 * logvar)
        return mu + eps * std

    def forward(self, x, eps):
        mu, logvar = self.encode(x)
        z = self.reparameterize(mu, logvar, eps)
        return self.decoder(z), mu, logvar


def vae_loss(model, x, eps):
    logits, mu, logvar = model(x, eps)
    recon = F.binary_cross_entropy_with_logits(logits, x, reduction="sum") / x.shape[0]
    kl = -0.5 * paddle.mean(paddle.sum(1 + logvar - mu.pow(2) - logvar.exp(), axis=1))
    return recon + kl


model = VAE()
rng = np.random.RandomState(8)
for name, param in model.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.2).astype("float32"))
opt = paddle.optimizer.Adam(learning_rate=0.005, parameters=model.parameters())

losses = []
model.train()
for epoch in range(3):
    for i in range(0, 512, 128):
        x = paddle.to_tensor(images[i:i + 128])
        eps = paddle.to_tensor(rng.randn(128, LATENT).astype("float32"))
        loss = vae_loss(model, x, eps)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))

model.eval()
with paddle.no_grad():
    mu, logvar = model.encode(paddle.to_tensor(images[:16]))
    decoded = F.sigmoid(model.decoder(mu))
    grid = paddle.to_tensor(np.linspace(-2, 2, 5, dtype="float32")).unsqueeze(1).tile([1, LATENT])
    generated = F.sigmoid(model.decoder(grid))
print(json.dumps({
    "losses": losses,
    "mu_head": mu[:2].numpy().tolist(),
    "logvar_mean": float(logvar.mean()),
    "recon_error": float(paddle.abs(decoded - paddle.to_tensor(images[:16])).mean()),
    "generated_sum": generated.sum(axis=1).numpy().tolist(),
}))
