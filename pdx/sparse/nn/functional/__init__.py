"""pdx.sparse.nn.functional: Paddle's sparse functional ops (`paddle.sparse.nn.functional`).

relu / relu6 / leaky_relu act on the stored values; softmax normalises over
the stored values along an axis; conv2d / conv3d / subm_conv2d / subm_conv3d
and max_pool3d work on channels-last hybrid COO tensors (values `[nnz, C]`);
`attention` computes scores only at a sparse mask's positions. The
`*_igemm` names (a CUDA backend in Paddle) are the same functions.
"""

from pdx.sparse.nn.functional._activation import leaky_relu, relu, relu6, softmax
from pdx.sparse.nn.functional._attention import attention
from pdx.sparse.nn.functional._conv import conv2d, conv3d, max_pool3d, subm_conv2d, subm_conv3d

subm_conv2d_igemm = subm_conv2d
subm_conv3d_igemm = subm_conv3d

__all__ = ["attention", "conv2d", "conv3d", "leaky_relu", "max_pool3d", "relu", "relu6", "softmax", "subm_conv2d",
           "subm_conv2d_igemm", "subm_conv3d", "subm_conv3d_igemm"]
