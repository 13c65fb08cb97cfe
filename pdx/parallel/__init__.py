"""pdx.parallel: Paddle's hybrid parallelism as sharding over one device mesh.

    HybridConfig        dp x pp x sharding x ep x sep x mp degrees -> jax.sharding.Mesh
    default_rules       logical axis name -> mesh axis
    shard               place a Layer / optimizer by logical names and ZeRO stage
    constrain, use_mesh constrain activations by logical names inside a step
    context_attention   attention with the sequence split over "sep" (ring or all-gather)
    named_sharding      the NamedSharding for an input batch
    logical_to_spec, zero_spec, zero_placement   the rules as functions (zero_placement: the ZeRO stages, written once)
    collectives, collective_summary   collectives in a compiled step's HLO
    run_layers, pipeline, bubble_fraction   layer stacks: loop, scan or GPipe/interleaved pipeline
    pipeline_1f1b_loss  the 1F1B schedule (loss head inside; memory set by the stages, not the microbatches)
    init                join the multi-process job (`pdx launch`, SLURM, Kubernetes)
    configure_launch    the `pdx launch` arguments on an argparse parser (for other launcher spellings)
"""

from pdx.parallel._config import HybridConfig, default_rules
from pdx.parallel._context import context_attention, context_parallel_active
from pdx.parallel._hlo import Collective, collective_summary, collectives
from pdx.parallel._launch import configure as configure_launch
from pdx.parallel._launch import init
from pdx.parallel._pipeline import bubble_fraction, pipeline, run_layers
from pdx.parallel._pipeline_1f1b import pipeline_1f1b_loss
from pdx.parallel._shard import (ZeroPlacement, constrain, logical_to_spec, named_sharding, shard, use_mesh,
                                 zero_placement, zero_spec)

__all__ = [
    "Collective",
    "HybridConfig",
    "ZeroPlacement",
    "bubble_fraction",
    "collective_summary",
    "collectives",
    "configure_launch",
    "constrain",
    "context_attention",
    "context_parallel_active",
    "default_rules",
    "init",
    "logical_to_spec",
    "named_sharding",
    "pipeline",
    "pipeline_1f1b_loss",
    "run_layers",
    "shard",
    "use_mesh",
    "zero_placement",
    "zero_spec",
]
