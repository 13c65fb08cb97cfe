"""A dataset written the way Paddle tutorials write scripts: the global
generators are seeded at module level, so every worker that imports
this module starts from the same numpy and `random` state."""

import json
import os
import random
import time

import numpy as np

import pdx
from pdx.io import Dataset, get_worker_info

np.random.seed(0)
random.seed(0)


class GlobalDraws(Dataset):
    """Each sample draws from numpy's, Python's and pdx's global generators and says who drew it.

    Samples are JSON strings so the draws and the 62-bit seed pass the
    DataLoader unchanged (numbers would become float32/int32 jax arrays).
    """

    def __init__(self, n=8, draw_pdx=True):
        self.n, self.draw_pdx = n, draw_pdx

    def __getitem__(self, idx):
        info = get_worker_info()
        sample = {"index": int(idx), "np": float(np.random.rand()), "py": random.random(),
                  "id": info.id, "num_workers": info.num_workers, "seed": info.seed,
                  "dataset_len": len(info.dataset), "pid": os.getpid()}
        if self.draw_pdx:
            sample["pdx"] = float(np.asarray(pdx.rand([1]))[0])
        return json.dumps(sample)

    def __len__(self):
        return self.n


class HangsAt(Dataset):
    """Sleeps for an hour on one index; other samples are the loading process's pid."""

    def __init__(self, bad_index, n=8):
        self.bad_index, self.n = bad_index, n

    def __getitem__(self, idx):
        if idx == self.bad_index:
            time.sleep(3600)
        return np.int64(os.getpid())

    def __len__(self):
        return self.n
