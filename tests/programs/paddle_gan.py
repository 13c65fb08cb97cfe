"""A GAN on a generated 1-D mixture: a generator and a discriminator as two
sublayers of one Layer, each trained by its own Adam optimizer, with
BCEWithLogitsLoss and `.detach()` on the fake batch in the discriminator step."""
import json

import numpy as np
import paddle
import paddle.nn as nn

paddle.set_device("cpu")
NOISE, BATCH = 4, 64


class Generator(nn.Layer):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(NOISE, 16), nn.LeakyReLU(0.2), nn.Linear(16, 16), nn.LeakyReLU(0.2),
                                 nn.Linear(16, 2))

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Layer):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x)


class GAN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.generator = Generator()
        self.discriminator = Discriminator()


gan = GAN()
rng = np.random.RandomState(5)
for name, param in gan.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.3).astype("float32"))
opt_g = paddle.optimizer.Adam(learning_rate=0.002, beta1=0.5, parameters=gan.generator.parameters())
opt_d = paddle.optimizer.Adam(learning_rate=0.002, beta1=0.5, parameters=gan.discriminator.parameters())
bce = nn.BCEWithLogitsLoss()


def real_batch(rng):
    centers = np.array([[2.0, 0.0], [-2.0, 0.0]], dtype="float32")
    pick = rng.randint(0, 2, size=BATCH)
    return (centers[pick] + 0.2 * rng.randn(BATCH, 2)).astype("float32")


def d_loss_fn(gan, real, z):
    fake = gan.generator(z).detach()
    real_logits = gan.discriminator(real)
    fake_logits = gan.discriminator(fake)
    return bce(real_logits, paddle.ones_like(real_logits)) + bce(fake_logits, paddle.zeros_like(fake_logits))


def g_loss_fn(gan, z):
    fake_logits = gan.discriminator(gan.generator(z))
    return bce(fake_logits, paddle.ones_like(fake_logits))


d_losses, g_losses = [], []
for step in range(40):
    real = paddle.to_tensor(real_batch(rng))
    z = paddle.to_tensor(rng.randn(BATCH, NOISE).astype("float32"))
    d_loss = d_loss_fn(gan, real, z)
    d_loss.backward()
    opt_d.step()
    opt_d.clear_grad()

    z = paddle.to_tensor(rng.randn(BATCH, NOISE).astype("float32"))
    g_loss = g_loss_fn(gan, z)
    g_loss.backward()
    opt_g.step()
    opt_g.clear_grad()
    opt_d.clear_grad()
    d_losses.append(float(d_loss))
    g_losses.append(float(g_loss))

gan.eval()
with paddle.no_grad():
    samples = gan.generator(paddle.to_tensor(np.random.RandomState(1).randn(256, NOISE).astype("float32")))
    score = paddle.nn.functional.sigmoid(gan.discriminator(samples))
print(json.dumps({
    "d_losses": d_losses,
    "g_losses": g_losses,
    "sample_mean": samples.mean(axis=0).numpy().tolist(),
    "sample_std": samples.std(axis=0).numpy().tolist(),
    "score_mean": float(score.mean()),
    "n_gen_params": len(opt_g._parameter_list),
    "n_params": len(gan.parameters()),
}))
