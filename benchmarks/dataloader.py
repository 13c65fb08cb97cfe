"""DataLoader throughput: pdx.io.DataLoader (grain workers) vs torch.utils.data.DataLoader.

Both loaders read the same map-style dataset object: synthetic uint8 HWC
images through the same numpy augmentation (pdx.vision.transforms:
RandomCrop(padding=4) + RandomHorizontalFlip + ToTensor + Normalize), default
collate, batch 128. pdx hands out jax arrays (device_put included), torch
hands out torch tensors. Three numbers per loader and worker count:

  cold  samples/s over one full epoch including worker start-up
        (pdx forks workers from its fork server, which imports JAX and
        grain once per program; torch forks the main process, its Linux
        default)
  start seconds from iter(loader) to the first batch of that epoch
  warm  samples/s over later epochs with persistent_workers=True (steady state)
  1st   cold of a row's first run (not a median): in the first row with
        workers it includes starting pdx's fork server (built with that
        loader), the cost a program pays once

Medians over --repeats runs; ratio = pdx / torch (> 1: pdx faster).

    python benchmarks/dataloader.py [--n 8192] [--size 32] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

from pdx import io  # noqa: E402
from pdx.vision import transforms as T  # noqa: E402


class AugmentedImages(io.Dataset):
    """n synthetic size x size RGB images through a numpy augmentation pipeline."""

    def __init__(self, n: int, size: int):
        self.images = np.random.RandomState(0).randint(0, 256, (n, size, size, 3)).astype(np.uint8)
        self.labels = np.arange(n, dtype=np.int64) % 10
        self.transform = T.Compose([
            T.RandomCrop(size, padding=4), T.RandomHorizontalFlip(), T.ToTensor(),
            T.Normalize(mean=[0.49, 0.48, 0.45], std=[0.25, 0.24, 0.26]),
        ])

    def __getitem__(self, idx):
        return self.transform(self.images[idx]), self.labels[idx]

    def __len__(self):
        return len(self.images)


def _consume(loader) -> tuple[int, float]:
    """(samples, seconds to the first batch) over one epoch."""
    count, t, first = 0, time.perf_counter(), None
    for x, _ in loader:
        first = time.perf_counter() - t if first is None else first
        count += x.shape[0]
    if hasattr(x, "block_until_ready"):
        x.block_until_ready()
    return count, first


def _pdx(ds, workers, batch, persistent):
    return io.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers, seed=0,
                         persistent_workers=persistent)


def _torch(ds, workers, batch, persistent):
    import torch.utils.data as tud

    return tud.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers,
                          persistent_workers=persistent and workers > 0)


def measure(make, ds, workers, batch, warm_epochs) -> tuple[float, float, float]:
    loader = make(ds, workers, batch, False)
    t = time.perf_counter()
    n, start = _consume(loader)
    cold = n / (time.perf_counter() - t)
    loader = make(ds, workers, batch, True)
    _consume(loader)  # start-up epoch
    t = time.perf_counter()
    n = sum(_consume(loader)[0] for _ in range(warm_epochs))
    warm = n / (time.perf_counter() - t)
    stream = getattr(loader, "_stream", None)
    if stream is not None:
        stream.close()
    return cold, start, warm


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8192, help="images in the dataset")
    parser.add_argument("--size", type=int, default=32, help="image height = width")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    parser.add_argument("--warm-epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import torch

    ds = AugmentedImages(args.n, args.size)
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, load avg {os.getloadavg()[0]:.1f}; torch {torch.__version__}; "
          f"n={args.n}, {args.size}x{args.size}x3, batch {args.batch}, medians of {args.repeats}")
    print("| workers | pdx cold | torch cold | cold ratio | pdx start s | torch start s | pdx warm | torch warm "
          "| warm ratio | pdx 1st | torch 1st | 1st ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for workers in args.workers:
        runs = {"pdx": [], "torch": []}
        for _ in range(args.repeats):  # interleaved so load changes hit both alike
            runs["pdx"].append(measure(_pdx, ds, workers, args.batch, args.warm_epochs))
            runs["torch"].append(measure(_torch, ds, workers, args.batch, args.warm_epochs))
        med = {k: [statistics.median(r[i] for r in v) for i in range(3)] for k, v in runs.items()}
        (pc, ps, pw), (tc, ts, tw) = med["pdx"], med["torch"]
        p1, t1 = runs["pdx"][0][0], runs["torch"][0][0]
        print(f"| {workers} | {pc:,.0f} | {tc:,.0f} | {pc / tc:.2f} | {ps:.2f} | {ts:.2f} | {pw:,.0f} | {tw:,.0f} "
              f"| {pw / tw:.2f} | {p1:,.0f} | {t1:,.0f} | {p1 / t1:.2f} |", flush=True)


if __name__ == "__main__":
    main()
