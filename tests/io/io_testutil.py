"""Datasets for DataLoader tests, in an importable module so workers
(and the resume test's fresh process) can load them by reference."""

import os

import numpy as np

from pdx.io import Dataset, IterableDataset, get_worker_info, sample_rng
from pdx.vision import transforms as T


class AugmentedImages(Dataset):
    """Synthetic 3x8x8 uint8 images through RandomCrop + RandomHorizontalFlip + Normalize."""

    def __init__(self, n=24):
        self.images = np.random.RandomState(0).randint(0, 256, (n, 8, 8, 3)).astype(np.uint8)
        self.transform = T.Compose([T.RandomCrop(6, padding=1), T.RandomHorizontalFlip(),
                                    T.ToTensor(), T.Normalize(mean=0.5, std=0.5)])

    def __getitem__(self, idx):
        return self.transform(self.images[idx]), np.int64(idx)

    def __len__(self):
        return len(self.images)


INIT_WORKER_ID = -1  # set by mark_worker in each worker process


def mark_worker(worker_id):
    """A Paddle-style worker_init_fn(worker_id)."""
    global INIT_WORKER_ID
    INIT_WORKER_ID = worker_id


class WhoLoads(Dataset):
    """Each sample reports the process, worker, worker_init_fn mark and (low bits of the) epoch seed that loaded it."""

    def __getitem__(self, idx):
        info = get_worker_info()
        if info is None:
            return np.int64(idx), np.int64(os.getpid()), np.int64(-1), np.int64(INIT_WORKER_ID), np.int64(-1)
        assert info.dataset is not None
        return (np.int64(idx), np.int64(os.getpid()), np.int64(info.id), np.int64(INIT_WORKER_ID),
                np.int64(info.seed % 2**31))  # batches become int32 jax arrays

    def __len__(self):
        return 16


class FailsAt(Dataset):
    """Raises on one sample index."""

    def __init__(self, bad_index):
        self.bad_index = bad_index

    def __getitem__(self, idx):
        if idx == self.bad_index:
            raise ValueError(f"corrupt record {idx}")
        return np.float32(idx)

    def __len__(self):
        return 32


class DiesAt(Dataset):
    """Kills its worker process on one sample index (like a segfault would)."""

    def __init__(self, bad_index):
        self.bad_index = bad_index

    def __getitem__(self, idx):
        if idx == self.bad_index:
            os._exit(3)
        return np.float32(idx)

    def __len__(self):
        return 32


class ShardedRange(IterableDataset):
    """0..n-1, split between workers with get_worker_info() (Paddle's recipe), with a random draw each."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        worker, count = (0, 1) if info is None else (info.id, info.num_workers)
        for i in range(worker, self.n, count):
            yield np.int64(i), np.int64(worker), np.int64(sample_rng().integers(1 << 40))


class ForkInfo(Dataset):
    """Sample i: JSON {"pid", "parent", "backend", "poll", "frozen"}: the loading process, its parent, whether it
    holds a JAX backend, how often it will check for the stop signal once it has made its last batch, and how
    many objects its garbage collector never walks (those the fork server froze)."""

    def __getitem__(self, idx):
        import gc
        import json

        from grain._src.python.dataset.transformations import process_prefetch
        from jax._src import xla_bridge

        return json.dumps({"pid": os.getpid(), "parent": os.getppid(), "backend": bool(xla_bridge._backends),
                           "poll": process_prefetch._PARENT_EXHAUSTED_WAIT_S, "frozen": gc.get_freeze_count()})

    def __len__(self):
        return 4


class Shifted(Dataset):
    """i -> i + shift, with a 1 MiB array aboard (the dataset workers receive through a file)."""

    def __init__(self, n):
        self.n, self.shift, self.payload = n, 0, np.zeros(1 << 18, np.float32)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.int64(i + self.shift + self.payload[0])


class Scribbled(Dataset):
    """Sample i is rows[i]'s sum, after the worker adds 1000 to that row of its own copy."""

    def __init__(self, n):
        self.rows = np.arange(n * 4096, dtype=np.float64).reshape(n, 4096)  # 32 KiB a row: out of band

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        self.rows[i] += 1000.0  # a worker's copy-on-write pages; never the main process's array
        return np.float64(self.rows[i].sum())
