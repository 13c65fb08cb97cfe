"""pdx.sparse.nn: Paddle's sparse layers (`paddle.sparse.nn`).

Activation layers (ReLU, ReLU6, LeakyReLU, Softmax) over the functional ops in
`pdx.sparse.nn.functional`. Sparse Conv2D/Conv3D/SubmConv2D/SubmConv3D,
BatchNorm/SyncBatchNorm and MaxPool3D are not implemented yet.
"""

from pdx.sparse.nn import functional
from pdx.sparse.nn._layers import LeakyReLU, ReLU, ReLU6, Softmax

__all__ = ["LeakyReLU", "ReLU", "ReLU6", "Softmax", "functional"]
