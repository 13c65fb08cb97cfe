"""pdx.sparse: Paddle's sparse tensors and ops (`paddle.sparse`) on jax.experimental.sparse.

COO tensors are `BCOO`, CSR tensors `BCSR` (2-D, or 3-D batched); Paddle's
argument layout is kept (`sparse_coo_tensor(indices [sparse_dim, nnz],
values, shape)`, `sparse_csr_tensor(crows, cols, values, shape)`). Paddle's
sparse Tensor methods work on them (`sp.to_dense()`, `sp.values()`,
`sp.crows()`, `sp.cols()`, `sp.nnz()`, `sp.coalesce()`, `sp.is_sparse_coo()`,
`sp.to_sparse_csr()`, ...) and as functions (`pdx.sparse.to_dense(sp)`);
`indices` is jax's field on BCOO, so Paddle's `sp.indices()` is
`pdx.sparse.indices(sp)`.

Eagerly every result stores exactly Paddle's entries; under jit, ops whose
number of entries depends on the data keep a static upper bound with padding
(ignored by `to_dense` and every op). Sparse ops run on CPU here, where
Paddle's own CPU build lacks matmul / mv / addmm / masked_matmul.
"""

from pdx._tensor_names import methods_enabled
from pdx.sparse import _methods as _sparse_methods
from pdx.sparse import nn
from pdx.sparse._binary import add, addmm, divide, is_same_shape, mask_as, masked_matmul, matmul, multiply, mv, subtract
from pdx.sparse._core import (coalesce, cols, crows, indices, is_sparse, is_sparse_coo, is_sparse_csr, nnz,
                              sparse_coo_tensor, sparse_csr_tensor, to_dense, to_sparse_coo, to_sparse_csr, values)
from pdx.sparse._linalg import pca_lowrank
from pdx.sparse._manipulation import reshape, slice, sum, transpose
from pdx.sparse._unary import (abs, asin, asinh, atan, atanh, cast, deg2rad, expm1, isnan, log1p, neg, pow, rad2deg,
                               sin, sinh, sqrt, square, tan, tanh)

__all__ = [
    "abs", "add", "addmm", "asin", "asinh", "atan", "atanh", "cast", "coalesce", "cols", "crows", "deg2rad",
    "divide", "expm1", "indices", "is_same_shape", "is_sparse", "is_sparse_coo", "is_sparse_csr", "isnan",
    "log1p", "mask_as", "masked_matmul", "matmul", "multiply", "mv", "neg", "nn", "nnz", "pca_lowrank", "pow", "rad2deg",
    "reshape", "sin", "sinh", "slice", "sparse_coo_tensor", "sparse_csr_tensor", "sqrt", "square", "subtract",
    "sum", "tan", "tanh", "to_dense", "to_sparse_coo", "to_sparse_csr", "transpose", "values",
]

# Paddle's sparse Tensor methods on BCOO / BCSR, off with PDX_TENSOR_METHODS=0 like the dense ones.
if methods_enabled():
    _sparse_methods.register()
