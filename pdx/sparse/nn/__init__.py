"""pdx.sparse.nn: Paddle's sparse layers (`paddle.sparse.nn`).

Activations (ReLU, ReLU6, LeakyReLU, Softmax), sparse convolutions (Conv2D,
Conv3D, SubmConv2D, SubmConv3D), MaxPool3D and BatchNorm over channels-last
COO tensors, built on `pdx.sparse.nn.functional`. SyncBatchNorm is
BatchNorm: statistics over this process's stored sites (cross-device
synchronisation belongs to pdx.parallel's sharded programs).
"""

from pdx.sparse.nn import functional
from pdx.sparse.nn._layers import (BatchNorm, Conv2D, Conv3D, LeakyReLU, MaxPool3D, ReLU, ReLU6, Softmax, SubmConv2D,
                                   SubmConv3D)

SyncBatchNorm = BatchNorm

__all__ = ["BatchNorm", "Conv2D", "Conv3D", "LeakyReLU", "MaxPool3D", "ReLU", "ReLU6", "Softmax", "SubmConv2D",
           "SubmConv3D", "SyncBatchNorm", "functional"]
