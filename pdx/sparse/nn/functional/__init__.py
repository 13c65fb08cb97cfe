"""pdx.sparse.nn.functional: Paddle's sparse activations (`paddle.sparse.nn.functional`).

relu / relu6 / leaky_relu act on the stored values; softmax normalises over
the stored values along an axis. Sparse convolution, pooling and attention
(`conv2d`, `conv3d`, `subm_conv*`, `max_pool3d`, `attention`) are not
implemented yet.
"""

from pdx.sparse.nn.functional._activation import leaky_relu, relu, relu6, softmax

__all__ = ["leaky_relu", "relu", "relu6", "softmax"]
