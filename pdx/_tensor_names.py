"""The public method and attribute names of `paddle.Tensor` (paddlepaddle 3.3.1).

Data, not logic: `pdx._tensor` decides per name what a `jax.Array` gets. The
list is checked against the installed paddle by tests/test_tensor_methods.py;
regenerate it with

    python -c "import paddle; print([n for n in dir(paddle.Tensor) if not n.startswith('_')])"

`methods_enabled()` is the one switch for registering them (dense and sparse):
the environment variable `PDX_TENSOR_METHODS=0` set before importing pdx
turns it off.
"""

import os

__all__ = ["ENV_SWITCH", "PADDLE_TENSOR_METHODS", "methods_enabled"]

ENV_SWITCH = "PDX_TENSOR_METHODS"


def methods_enabled() -> bool:
    """Whether Paddle's Tensor methods get registered (`PDX_TENSOR_METHODS` unset or not '0'/'false'/'off'/'no').

    Example:
      >>> from pdx._tensor_names import methods_enabled
      >>> isinstance(methods_enabled(), bool)
      True
    """
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "false", "off", "no")

PADDLE_TENSOR_METHODS: tuple[str, ...] = (
    "T", "abs", "abs_", "acos", "acos_", "acosh", "acosh_", "add", "add_", "add_n", "addmm",
    "addmm_", "all", "allclose", "amax", "amin", "angle", "any", "apply", "apply_", "argmax",
    "argmin", "argsort", "argwhere", "as_complex", "as_real", "as_strided", "asin", "asin_",
    "asinh", "asinh_", "astype", "atan", "atan2", "atan_", "atanh", "atanh_", "atleast_1d",
    "atleast_2d", "atleast_3d", "backward", "baddbmm", "baddbmm_", "bernoulli_", "bfloat16",
    "bincount", "bitwise_and", "bitwise_and_", "bitwise_invert", "bitwise_invert_",
    "bitwise_left_shift", "bitwise_left_shift_", "bitwise_not", "bitwise_not_", "bitwise_or",
    "bitwise_or_", "bitwise_right_shift", "bitwise_right_shift_", "bitwise_xor",
    "bitwise_xor_", "block", "block_diag", "bmm", "bool", "broadcast_shape", "broadcast_shapes",
    "broadcast_tensors", "broadcast_to", "bucketize", "byte", "cast", "cast_", "cauchy_",
    "cdist", "cdouble", "ceil", "ceil_", "cfloat", "char", "cholesky", "cholesky_inverse",
    "cholesky_solve", "chunk", "clamp", "clamp_", "clear_grad", "clear_gradient", "clip",
    "clip_", "clone", "coalesce", "cols", "combinations", "complex128", "complex64", "concat",
    "cond", "conj", "contiguous", "copy_", "copysign", "copysign_", "corrcoef", "cos", "cos_",
    "cosh", "cosh_", "count_nonzero", "cov", "cpu", "create_parameter", "create_tensor",
    "cross", "crows", "cuda", "cummax", "cummin", "cumprod", "cumprod_", "cumsum", "cumsum_",
    "cumulative_trapezoid", "data", "data_ptr", "deg2rad", "dense_dim", "detach", "detach_",
    "device", "diag", "diag_embed", "diagflat", "diagonal", "diagonal_scatter", "diff",
    "digamma", "digamma_", "dim", "dist", "div", "div_", "divide", "divide_", "dot", "double",
    "dsplit", "dtype", "eig", "eigvals", "eigvalsh", "element_size", "eq", "equal", "equal_",
    "equal_all", "erf", "erfinv", "erfinv_", "exp", "exp_", "expand", "expand_as", "expm1",
    "exponential_", "fill_", "fill_diagonal_", "fill_diagonal_tensor",
    "fill_diagonal_tensor_", "flatten", "flatten_", "flip", "float", "float16", "float32",
    "float64", "floor", "floor_", "floor_divide", "floor_divide_", "floor_mod", "floor_mod_",
    "fmax", "fmin", "frac", "frac_", "frexp", "gammainc", "gammainc_", "gammaincc",
    "gammaincc_", "gammaln", "gammaln_", "gather", "gather_nd", "gcd", "gcd_", "ge",
    "geometric_", "get_device", "get_map_tensor", "get_selected_rows", "get_strides",
    "get_tensor", "grad", "grad_", "grad_fn", "gradient", "greater", "greater_equal",
    "greater_equal_", "greater_than", "greater_than_", "gt", "half", "heaviside", "histogram",
    "histogram_bin_edges", "histogramdd", "householder_product", "hsplit", "hypot", "hypot_",
    "i0", "i0_", "i0e", "i1", "i1e", "imag", "increment", "index_add", "index_add_",
    "index_fill", "index_fill_", "index_put", "index_put_", "index_sample", "index_select",
    "indices", "inner", "inplace_version", "int", "int16", "int32", "int64", "int8",
    "inverse", "is_coalesced", "is_complex", "is_contiguous", "is_cuda", "is_dense",
    "is_dist", "is_empty", "is_floating_point", "is_integer", "is_leaf", "is_same_shape",
    "is_selected_rows", "is_sparse", "is_sparse_coo", "is_sparse_csr", "is_tensor",
    "isclose", "isfinite", "isin", "isinf", "isnan", "isneginf", "isposinf", "isreal",
    "istft", "item", "itemsize", "kron", "kthvalue", "layout", "lcm", "lcm_", "ldexp",
    "ldexp_", "le", "lerp", "lerp_", "less", "less_", "less_equal", "less_equal_",
    "less_than", "less_than_", "lgamma", "lgamma_", "log", "log10", "log10_", "log1p",
    "log1p_", "log2", "log2_", "log_", "log_normal_", "logaddexp", "logcumsumexp",
    "logical_and", "logical_and_", "logical_not", "logical_not_", "logical_or",
    "logical_or_", "logical_xor", "logical_xor_", "logit", "logit_", "logsumexp", "long",
    "lstsq", "lt", "lu", "lu_unpack", "mT", "masked_fill", "masked_fill_", "masked_scatter",
    "masked_scatter_", "masked_select", "matmul", "matrix_power", "matrix_transpose", "max",
    "maximum", "mean", "median", "min", "minimum", "mm", "mod", "mod_", "mode", "moveaxis",
    "msort", "mul", "mul_", "multi_dot", "multigammaln", "multigammaln_", "multinomial",
    "multiplex", "multiply", "multiply_", "mv", "name", "nan_to_num", "nan_to_num_",
    "nanmean", "nanmedian", "nanquantile", "nansum", "narrow", "ndim", "ndimension", "ne",
    "neg", "neg_", "negative", "new_empty", "new_full", "new_ones", "new_zeros", "nextafter",
    "nnz", "nonzero", "norm", "normal_", "not_equal", "not_equal_", "num_shard", "numel",
    "numpy", "offset", "ormqr", "outer", "pca_lowrank", "permute", "persistable",
    "pin_memory", "pinv", "place", "placements", "polar", "polygamma", "polygamma_", "pow",
    "pow_", "process_mesh", "prod", "put_along_axis", "put_along_axis_", "qr", "quantile",
    "rad2deg", "random_", "rank", "ravel", "real", "reciprocal", "reciprocal_",
    "reconstruct_from_", "reduce_as", "register_hook", "remainder", "remainder_", "renorm",
    "renorm_", "repeat", "repeat_interleave", "requires_grad", "requires_grad_",
    "reshape", "reshape_", "resize_", "retain_grads", "reverse", "roll", "rot90", "round",
    "round_", "rows", "rsqrt", "rsqrt_", "scale", "scale_", "scatter", "scatter_",
    "scatter_add", "scatter_add_", "scatter_nd", "scatter_nd_add", "scatter_reduce",
    "select_scatter", "set_", "set_string_list", "set_tensor", "set_value", "set_vocab",
    "sgn", "shape", "shard_index", "short", "sigmoid", "sigmoid_", "sign", "signbit", "sin",
    "sin_", "sinc", "sinc_", "sinh", "sinh_", "size", "slice", "slice_scatter", "slogdet",
    "softmax", "solve", "sort", "sparse_dim", "split", "split_with_sizes", "sqrt", "sqrt_",
    "square", "square_", "squeeze", "squeeze_", "stack", "stanh", "std", "stft",
    "stop_gradient", "stride", "strided_slice", "strides", "sub", "sub_", "subtract",
    "subtract_", "sum", "svd_lowrank", "swapaxes", "swapdims", "t", "t_", "take",
    "take_along_axis", "take_along_dim", "tan", "tan_", "tanh", "tanh_", "tensor_split",
    "tensordot", "tile", "to", "to_dense", "to_sparse_coo", "to_sparse_csr", "tolist",
    "top_p_sampling", "topk", "trace", "transpose", "transpose_", "trapezoid", "tril",
    "tril_", "triu", "triu_", "true_divide", "trunc", "trunc_", "type", "type_as", "uint8",
    "unbind", "unflatten", "unfold", "uniform_", "unique", "unique_consecutive", "unsqueeze",
    "unsqueeze_", "unstack", "value", "values", "vander", "var", "view", "view_as",
    "view_as_complex", "view_as_real", "vsplit", "where", "where_", "zero_",
)
