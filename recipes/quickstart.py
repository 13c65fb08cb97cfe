"""Quickstart: train a small CNN on scikit-learn's handwritten digits.

The data ships inside scikit-learn (1,797 8x8 images), so nothing is
downloaded. The script does what a Paddle user does: build a model eagerly,
run one training step op by op (print works), compile the same step with
`@pdx.jit`, then hand the model to `pdx.Model(...).fit(...)` — Paddle's
high-level API — with a progress bar and a TensorBoard log directory. Then
the deployment path: a verified checkpoint of the training state (shown with
`pdx ckpt inspect`), a StableHLO artifact run by the XLA runtime and, compiled
by IREE, by the IREE host runtime, and one request to `pdx serve`'s HTTP API.

    python recipes/quickstart.py [--epochs 10] [--batch-size 32] [--log-dir runs/quickstart]
    tensorboard --logdir runs/quickstart      # loss, accuracy, lr, weight histograms
    pdx ckpt inspect checkpoints/quickstart-state
    pdx serve artifacts/digits                # the exported model over HTTP
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import jax.numpy as jnp

import pdx
import pdx.nn.functional as F
from pdx import nn
from pdx.vision import datasets, transforms


@dataclasses.dataclass(frozen=True)
class QuickstartConfig:
    epochs: int = 10                       # passes over the training split in Model.fit
    batch_size: int = 32                   # images per step
    learning_rate: float = 2e-3            # Adam step size
    seed: int = 0                          # parameter init and data order
    log_dir: str = "runs/quickstart"       # TensorBoard event files (VisualDL callback)
    save_dir: str = "checkpoints/quickstart"  # Model.save files (safetensors + JSON)
    ckpt_dir: str = "checkpoints/quickstart-state"  # sharded, verified TrainState checkpoints (pdx.checkpoint)
    artifact_dir: str = "artifacts/digits"  # exported StableHLO + weights + IREE module


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


def loss_fn(model, x, y):
    return F.cross_entropy(model(x), y)


@pdx.jit
def train_step(model, opt, x, y):
    loss, grads = pdx.value_and_grad(loss_fn)(model, x, y)
    opt.step(grads)
    return loss


def main(cfg: QuickstartConfig) -> float:
    to_tensor = transforms.ToTensor()  # HWC uint8 -> CHW float32 in [0, 1], run in the loader
    train = datasets.Digits(mode="train", transform=to_tensor)
    test = datasets.Digits(mode="test", transform=to_tensor)
    pdx.seed(cfg.seed)
    model = LeNet()
    opt = pdx.optimizer.Adam(learning_rate=cfg.learning_rate, parameters=model.parameters())
    print(model)

    # One eager step: plain Python, every op runs immediately.
    loader = pdx.io.DataLoader(train, batch_size=cfg.batch_size, shuffle=True, drop_last=True)
    x, y = next(iter(loader))
    loss, grads = pdx.value_and_grad(loss_fn)(model, x, y)
    opt.step(grads)
    print(f"eager step: loss {float(loss):.4f}, grad norm of {next(iter(grads))}: "
          f"{float(jnp.linalg.norm(next(iter(grads.values())))):.4f}")

    # The same step compiled by XLA.
    loss = train_step(model, opt, x, y)
    print(f"compiled step: loss {float(loss):.4f}")

    # Paddle's high-level API: one compiled step over a pdx.TrainState (the
    # model's weights and the optimizer's state carry over), a progress bar,
    # TensorBoard logs and checkpoints.
    trainer = pdx.Model(model)
    trainer.prepare(opt, F.cross_entropy, pdx.metric.Accuracy())
    start = time.perf_counter()
    trainer.fit(train, test, batch_size=cfg.batch_size, epochs=cfg.epochs, eval_freq=5, drop_last=True,
                verbose=1, log_freq=10, save_dir=cfg.save_dir, save_freq=cfg.epochs,
                callbacks=[pdx.callbacks.VisualDL(log_dir=cfg.log_dir)])
    elapsed = time.perf_counter() - start
    acc = trainer.evaluate(test, batch_size=cfg.batch_size, verbose=0)["acc"]  # reuses the compiled eval step
    print(f"test accuracy {acc:.4f} ({len(test)} images), fit in {elapsed:.1f}s; "
          f"TensorBoard: tensorboard --logdir {cfg.log_dir}")
    deploy(cfg, trainer, test)
    return acc


def deploy(cfg: QuickstartConfig, trainer, test) -> None:
    """Checkpoint the training state, export the network, run it on XLA and IREE, serve it once."""
    import threading

    import numpy as np
    import uvicorn

    from pdx.cli import main as pdx_cli

    # 1. The whole TrainState (weights, optimizer state, step, RNG) as a verified orbax checkpoint.
    state = trainer.train_state
    with pdx.checkpoint.CheckpointManager(cfg.ckpt_dir, max_to_keep=2) as manager:
        if manager.latest_step() != int(state.step):
            manager.save(int(state.step), state, metadata={"recipe": "quickstart"})
    print(f"\n$ pdx ckpt inspect {cfg.ckpt_dir}")
    pdx_cli(["ckpt", "inspect", cfg.ckpt_dir])

    # 2. One artifact: StableHLO for XLA plus an IREE module for this CPU (the same
    #    program; iree-arm64-android / iree-vulkan targets compile for phones and GPUs).
    network = trainer.network
    network.eval()
    spec = [pdx.jit.InputSpec([None, 1, 8, 8], "float32", "image")]
    path = pdx.export.export(network, cfg.artifact_dir, spec, targets=("xla", "iree-llvm-cpu"),
                             name="digits", iree={"batch_split": True})
    images = np.stack([np.asarray(test[i][0]) for i in range(len(test))])
    labels = np.array([int(np.asarray(test[i][1]).item()) for i in range(len(test))])
    for runtime in ("xla", "iree"):
        predictor = pdx.export.load(path, runtime=runtime)
        accuracy = float((np.asarray(predictor(images)).argmax(-1) == labels).mean())
        print(f"{runtime} runtime: test accuracy {accuracy:.4f}")

    # 3. Serve the artifact over HTTP on loopback, send one request, stop.
    server = uvicorn.Server(uvicorn.Config(pdx.export.create_app(path), host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not (server.started and server.servers):
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    client = pdx.export.Client(f"http://127.0.0.1:{port}")
    client.wait_ready()
    scores = np.asarray(client.predict("digits", images[:4]))
    print(f"served: POST /v1/models/digits:predict -> classes {scores.argmax(-1).tolist()} "
          f"(labels {labels[:4].tolist()})")
    server.should_exit = True
    thread.join(timeout=10)


if __name__ == "__main__":
    from _config_cli import flags  # recipes/ is sys.path[0] when a recipe runs

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for field in dataclasses.fields(QuickstartConfig):
        parser.add_argument(*flags(field.name), dest=field.name, type=type(field.default), default=field.default)
    main(QuickstartConfig(**vars(parser.parse_args())))
