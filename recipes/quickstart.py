"""Quickstart: train a small CNN on scikit-learn's handwritten digits.

The data ships inside scikit-learn (1,797 8x8 images), so nothing is
downloaded. The script does what a Paddle user does: build a model eagerly,
run one training step op by op (print works), then compile the same step
with `@pdx.jit` and train to convergence.

    python recipes/quickstart.py [--epochs 12] [--batch-size 64]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import jax.numpy as jnp
import numpy as np

import pdx
import pdx.nn.functional as F
from pdx import nn


@dataclasses.dataclass(frozen=True)
class QuickstartConfig:
    epochs: int = 12             # passes over the training split
    batch_size: int = 64         # images per step
    learning_rate: float = 2e-3  # Adam step size
    test_fraction: float = 0.2   # held-out share of the 1,797 images
    seed: int = 0                # parameter init and data order


class LeNet(nn.Layer):
    """A LeNet-style CNN for 1x8x8 inputs: two conv/pool stages and two linears."""

    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2D(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2),   # (B, 16, 4, 4)
            nn.Conv2D(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2),  # (B, 32, 2, 2)
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(32 * 2 * 2, 64), nn.ReLU(), nn.Linear(64, num_classes),
        )

    def forward(self, x):
        return self.classifier(self.features(x))


def load_digits(test_fraction: float, seed: int):
    from sklearn.datasets import load_digits as sk_digits

    images, labels = sk_digits(return_X_y=True)
    images = (images / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)  # NCHW like Paddle
    order = np.random.default_rng(seed).permutation(len(images))
    n_test = int(len(images) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return (images[train], labels[train].astype(np.int32)), (images[test], labels[test].astype(np.int32))


def loss_fn(model, x, y):
    return F.cross_entropy(model(x), y)


@pdx.jit
def train_step(model, opt, x, y):
    loss, grads = pdx.value_and_grad(loss_fn)(model, x, y)
    opt.step(grads)
    return loss


@pdx.jit
def predict(model, x):
    return pdx.argmax(model(x), axis=-1)


def accuracy(model, images, labels) -> float:
    model.eval()
    correct = sum(int((predict(model, jnp.asarray(images[i:i + 256])) == labels[i:i + 256]).sum())
                  for i in range(0, len(images), 256))
    model.train()
    return correct / len(images)


def main(cfg: QuickstartConfig) -> float:
    (x_train, y_train), (x_test, y_test) = load_digits(cfg.test_fraction, cfg.seed)
    pdx.seed(cfg.seed)
    model = LeNet()
    opt = pdx.optimizer.Adam(learning_rate=cfg.learning_rate, parameters=model.parameters())
    print(model)

    # One eager step: plain Python, every op runs immediately.
    x, y = jnp.asarray(x_train[: cfg.batch_size]), jnp.asarray(y_train[: cfg.batch_size])
    loss, grads = pdx.value_and_grad(loss_fn)(model, x, y)
    opt.step(grads)
    print(f"eager step: loss {float(loss):.4f}, grad norm of {next(iter(grads))}: "
          f"{float(jnp.linalg.norm(next(iter(grads.values())))):.4f}")

    # The same step compiled by XLA.
    rng = np.random.default_rng(cfg.seed)
    steps_per_epoch = len(x_train) // cfg.batch_size
    start = time.perf_counter()
    for epoch in range(cfg.epochs):
        order = rng.permutation(len(x_train))
        for s in range(steps_per_epoch):
            idx = order[s * cfg.batch_size:(s + 1) * cfg.batch_size]
            loss = train_step(model, opt, jnp.asarray(x_train[idx]), jnp.asarray(y_train[idx]))
        print(f"epoch {epoch + 1:2d}  loss {float(loss):.4f}")
    elapsed = time.perf_counter() - start
    acc = accuracy(model, x_test, y_test)
    print(f"test accuracy {acc:.4f} ({len(x_test)} images), "
          f"{cfg.epochs * steps_per_epoch} compiled steps in {elapsed:.1f}s")
    return acc


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for field in dataclasses.fields(QuickstartConfig):
        parser.add_argument(f"--{field.name.replace('_', '-')}", type=type(field.default), default=field.default)
    main(QuickstartConfig(**vars(parser.parse_args())))
