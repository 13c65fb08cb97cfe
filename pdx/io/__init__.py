"""pdx.io: datasets, samplers and the DataLoader (Paddle's `paddle.io`), on grain.

Datasets and samplers are plain numpy-side Python objects; the DataLoader
runs them in grain worker processes and hands out batches as `jax.Array`s.
See README.md in this directory for how a batch flows.
"""

from pdx.io._collate import default_collate_fn, default_convert_fn
from pdx.io._dataloader import DataLoader
from pdx.io._dataset import (
    ChainDataset,
    ComposeDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from pdx.io._sampler import (BatchSampler, DistributedBatchSampler, RandomSampler, Sampler, SequenceSampler,
                             SubsetRandomSampler, WeightedRandomSampler)
from pdx.io._worker import WorkerInfo, get_worker_info, sample_rng

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ComposeDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedBatchSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequenceSampler",
    "SubsetRandomSampler",
    "Subset",
    "TensorDataset",
    "WeightedRandomSampler",
    "WorkerInfo",
    "default_collate_fn",
    "default_convert_fn",
    "get_worker_info",
    "random_split",
    "sample_rng",
]
