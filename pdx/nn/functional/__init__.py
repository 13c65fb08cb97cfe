"""pdx.nn.functional (imported as F): Paddle's functional layer ops on jax.Arrays.

Names, arguments and defaults follow Paddle 3.x `paddle.nn.functional`. Where
JAX forces a difference it is in the op's docstring: random ops take a
keyword-only `key=` (required under jit), `inplace=` flags are ignored, and
`batch_norm_with_stats` returns the running statistics Paddle updates in place.
See README.md in this directory.
"""

from pdx.nn.functional._activation import celu
from pdx.nn.functional._activation import elu
from pdx.nn.functional._activation import gelu
from pdx.nn.functional._activation import glu
from pdx.nn.functional._activation import hardshrink
from pdx.nn.functional._activation import hardsigmoid
from pdx.nn.functional._activation import hardswish
from pdx.nn.functional._activation import hardtanh
from pdx.nn.functional._activation import leaky_relu
from pdx.nn.functional._activation import log_sigmoid
from pdx.nn.functional._activation import log_softmax
from pdx.nn.functional._activation import maxout
from pdx.nn.functional._activation import mish
from pdx.nn.functional._activation import prelu
from pdx.nn.functional._activation import relu
from pdx.nn.functional._activation import relu6
from pdx.nn.functional._activation import rrelu
from pdx.nn.functional._activation import selu
from pdx.nn.functional._activation import sigmoid
from pdx.nn.functional._activation import silu
from pdx.nn.functional._activation import softmax
from pdx.nn.functional._activation import softplus
from pdx.nn.functional._activation import softshrink
from pdx.nn.functional._activation import softsign
from pdx.nn.functional._activation import swish
from pdx.nn.functional._activation import tanh
from pdx.nn.functional._activation import tanhshrink
from pdx.nn.functional._activation import thresholded_relu
from pdx.nn.functional._activation import log_sigmoid as logsigmoid
from pdx.nn.functional._attention import scaled_dot_product_attention
from pdx.nn.functional._common import alpha_dropout
from pdx.nn.functional._common import bilinear
from pdx.nn.functional._common import cosine_similarity
from pdx.nn.functional._common import dropout
from pdx.nn.functional._common import dropout1d
from pdx.nn.functional._common import dropout2d
from pdx.nn.functional._common import dropout3d
from pdx.nn.functional._common import feature_alpha_dropout
from pdx.nn.functional._common import fold
from pdx.nn.functional._common import interpolate
from pdx.nn.functional._common import label_smooth
from pdx.nn.functional._common import linear
from pdx.nn.functional._common import pad
from pdx.nn.functional._common import unfold
from pdx.nn.functional._common import upsample
from pdx.nn.functional._common import zeropad2d
from pdx.nn.functional._conv import conv1d
from pdx.nn.functional._conv import conv1d_transpose
from pdx.nn.functional._conv import conv2d
from pdx.nn.functional._conv import conv2d_transpose
from pdx.nn.functional._conv import conv3d
from pdx.nn.functional._conv import conv3d_transpose
from pdx.nn.functional._extension import class_center_sample
from pdx.nn.functional._extension import diag_embed
from pdx.nn.functional._extension import gather_tree
from pdx.nn.functional._extension import gumbel_softmax
from pdx.nn.functional._extension import pdist
from pdx.nn.functional._extension import sequence_mask
from pdx.nn.functional._extension import swiglu
from pdx.nn.functional._extension import temporal_shift
from pdx.nn.functional._flash import flash_attn_qkvpacked
from pdx.nn.functional._flash import sparse_attention
from pdx.nn.functional._flash import flashmask_attention
from pdx.nn.functional._flash import flash_attention_v3_varlen
from pdx.nn.functional._flash import flash_attn_varlen_qkvpacked
from pdx.nn.functional._grid import affine_grid
from pdx.nn.functional._grid import grid_sample
from pdx.nn.functional._inplace import elu_
from pdx.nn.functional._inplace import embedding_renorm_
from pdx.nn.functional._inplace import hardtanh_
from pdx.nn.functional._inplace import leaky_relu_
from pdx.nn.functional._inplace import relu_
from pdx.nn.functional._inplace import softmax_
from pdx.nn.functional._inplace import tanh_
from pdx.nn.functional._inplace import thresholded_relu_
from pdx.nn.functional._input import embedding
from pdx.nn.functional._input import one_hot
from pdx.nn.functional._loss import binary_cross_entropy
from pdx.nn.functional._loss import binary_cross_entropy_with_logits
from pdx.nn.functional._loss import cosine_embedding_loss
from pdx.nn.functional._loss import cross_entropy
from pdx.nn.functional._loss import hinge_embedding_loss
from pdx.nn.functional._loss import kl_div
from pdx.nn.functional._loss import l1_loss
from pdx.nn.functional._loss import log_loss
from pdx.nn.functional._loss import margin_ranking_loss
from pdx.nn.functional._loss import mse_loss
from pdx.nn.functional._loss import multi_label_soft_margin_loss
from pdx.nn.functional._loss import nll_loss
from pdx.nn.functional._loss import pairwise_distance
from pdx.nn.functional._loss import poisson_nll_loss
from pdx.nn.functional._loss import sigmoid_focal_loss
from pdx.nn.functional._loss import smooth_l1_loss
from pdx.nn.functional._loss import soft_margin_loss
from pdx.nn.functional._loss import softmax_with_cross_entropy
from pdx.nn.functional._loss import square_error_cost
from pdx.nn.functional._loss import triplet_margin_loss
from pdx.nn.functional._loss_dense import dice_loss
from pdx.nn.functional._loss_dense import gaussian_nll_loss
from pdx.nn.functional._loss_margin import margin_cross_entropy
from pdx.nn.functional._loss_margin import multi_label_margin_loss
from pdx.nn.functional._loss_margin import multi_margin_loss
from pdx.nn.functional._loss_margin import npair_loss
from pdx.nn.functional._loss_margin import triplet_margin_with_distance_loss
from pdx.nn.functional._loss_sequence import ctc_loss
from pdx.nn.functional._loss_sequence import rnnt_loss
from pdx.nn.functional._loss_tree import adaptive_log_softmax_with_loss
from pdx.nn.functional._loss_tree import hsigmoid_loss
from pdx.nn.functional._norm import batch_norm
from pdx.nn.functional._norm import batch_norm_with_stats
from pdx.nn.functional._norm import group_norm
from pdx.nn.functional._norm import instance_norm
from pdx.nn.functional._norm import layer_norm
from pdx.nn.functional._norm import local_response_norm
from pdx.nn.functional._norm import normalize
from pdx.nn.functional._norm import rms_norm
from pdx.nn.functional._pooling import adaptive_avg_pool1d
from pdx.nn.functional._pooling import adaptive_avg_pool2d
from pdx.nn.functional._pooling import adaptive_avg_pool3d
from pdx.nn.functional._pooling import adaptive_max_pool1d
from pdx.nn.functional._pooling import adaptive_max_pool2d
from pdx.nn.functional._pooling import adaptive_max_pool3d
from pdx.nn.functional._pooling import avg_pool1d
from pdx.nn.functional._pooling import avg_pool2d
from pdx.nn.functional._pooling import avg_pool3d
from pdx.nn.functional._pooling import max_pool1d
from pdx.nn.functional._pooling import max_pool2d
from pdx.nn.functional._pooling import max_pool3d
from pdx.nn.functional._unpool_lp_fractional import fractional_max_pool2d
from pdx.nn.functional._unpool_lp_fractional import fractional_max_pool3d
from pdx.nn.functional._unpool_lp_fractional import lp_pool1d
from pdx.nn.functional._unpool_lp_fractional import lp_pool2d
from pdx.nn.functional._unpool_lp_fractional import max_unpool1d
from pdx.nn.functional._unpool_lp_fractional import max_unpool2d
from pdx.nn.functional._unpool_lp_fractional import max_unpool3d
from pdx.nn.functional._vision import channel_shuffle
from pdx.nn.functional._vision import pixel_shuffle
from pdx.nn.functional._vision import pixel_unshuffle

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_log_softmax_with_loss",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "affine_grid",
    "alpha_dropout",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "batch_norm",
    "batch_norm_with_stats",
    "bilinear",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "celu",
    "channel_shuffle",
    "class_center_sample",
    "conv1d",
    "conv1d_transpose",
    "conv2d",
    "conv2d_transpose",
    "conv3d",
    "conv3d_transpose",
    "cosine_embedding_loss",
    "cosine_similarity",
    "cross_entropy",
    "ctc_loss",
    "diag_embed",
    "dice_loss",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "elu",
    "elu_",
    "embedding",
    "embedding_renorm_",
    "feature_alpha_dropout",
    "flash_attention_v3_varlen",
    "flash_attn_qkvpacked",
    "flash_attn_varlen_qkvpacked",
    "flashmask_attention",
    "fold",
    "fractional_max_pool2d",
    "fractional_max_pool3d",
    "gather_tree",
    "gaussian_nll_loss",
    "gelu",
    "glu",
    "grid_sample",
    "group_norm",
    "gumbel_softmax",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "hardtanh_",
    "hinge_embedding_loss",
    "hsigmoid_loss",
    "instance_norm",
    "interpolate",
    "kl_div",
    "l1_loss",
    "label_smooth",
    "layer_norm",
    "leaky_relu",
    "leaky_relu_",
    "linear",
    "local_response_norm",
    "log_loss",
    "log_sigmoid",
    "log_softmax",
    "logsigmoid",
    "lp_pool1d",
    "lp_pool2d",
    "margin_cross_entropy",
    "margin_ranking_loss",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
    "maxout",
    "mish",
    "mse_loss",
    "multi_label_margin_loss",
    "multi_label_soft_margin_loss",
    "multi_margin_loss",
    "nll_loss",
    "normalize",
    "npair_loss",
    "one_hot",
    "pad",
    "pairwise_distance",
    "pdist",
    "pixel_shuffle",
    "pixel_unshuffle",
    "poisson_nll_loss",
    "prelu",
    "relu",
    "relu6",
    "relu_",
    "rms_norm",
    "rnnt_loss",
    "rrelu",
    "scaled_dot_product_attention",
    "selu",
    "sequence_mask",
    "sigmoid",
    "sigmoid_focal_loss",
    "silu",
    "smooth_l1_loss",
    "soft_margin_loss",
    "softmax",
    "softmax_",
    "softmax_with_cross_entropy",
    "softplus",
    "softshrink",
    "softsign",
    "sparse_attention",
    "square_error_cost",
    "swiglu",
    "swish",
    "tanh",
    "tanh_",
    "tanhshrink",
    "temporal_shift",
    "thresholded_relu",
    "thresholded_relu_",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
    "unfold",
    "upsample",
    "zeropad2d",
]
