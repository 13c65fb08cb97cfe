"""`paddle.distributed.fleet.meta_parallel`: tensor-parallel layers and the pipeline model description."""

from pdx.distributed.fleet._mp_layers import (
    ColumnParallelLinear,
    ParallelCrossEntropy,
    RNGStatesTracker,
    RowParallelLinear,
    VocabParallelEmbedding,
    get_rng_state_tracker,
    model_parallel_random_seed,
)
from pdx.distributed.fleet._pipeline import LayerDesc, PipelineLayer, PipelineParallel, SharedLayerDesc

__all__ = [
    "ColumnParallelLinear",
    "LayerDesc",
    "ParallelCrossEntropy",
    "PipelineLayer",
    "PipelineParallel",
    "RNGStatesTracker",
    "RowParallelLinear",
    "SharedLayerDesc",
    "VocabParallelEmbedding",
    "get_rng_state_tracker",
    "model_parallel_random_seed",
]
