"""Logical axis names carried by parameters and activations.

Layers tag each parameter dim with one of these names; `pdx.parallel` maps
names to mesh axes by rules in its config, so changing the parallel layout
never touches layer code. `None` marks a dim that is never sharded.
"""

BATCH = "batch"
SEQ = "seq"
EMBED = "embed"          # model width (d_model, hidden size, in_features of generic Linear)
MLP = "mlp"              # feed-forward width (out_features of generic Linear)
HEADS = "heads"          # attention query heads (fused heads*head_dim projections)
KV_HEADS = "kv_heads"    # key/value heads (GQA)
HEAD_DIM = "head_dim"
VOCAB = "vocab"          # embedding rows / LM head columns
NORM = "norm"            # scale/bias of normalization layers
CONV_IN = "conv_in"      # input channels of a convolution weight
CONV_OUT = "conv_out"    # output channels of a convolution weight
LAYERS = "layers"        # stacked identical layers (scan)
STAGE = "stage"          # pipeline stages
EXPERT = "expert"        # mixture-of-experts experts (stacked expert weights)

__all__ = ["BATCH", "CONV_IN", "CONV_OUT", "EMBED", "EXPERT", "HEADS", "HEAD_DIM", "KV_HEADS",
           "LAYERS", "MLP", "NORM", "SEQ", "STAGE", "VOCAB"]
