"""pdx.linalg: Paddle's `paddle.linalg` namespace (norms, solves, factorizations) over jax.numpy.

Matrix functions act on the last two dims and broadcast over leading batch dims.
Names that Paddle also has at the top level (`pdx.cholesky`, `pdx.norm`, `pdx.matmul`,
...) are the same functions. See README.md in this folder for the differences from Paddle.
"""

from pdx.linalg._decomp import eig
from pdx.linalg._decomp import eigh
from pdx.linalg._decomp import eigvals
from pdx.linalg._decomp import householder_product
from pdx.linalg._decomp import lstsq
from pdx.linalg._decomp import lu
from pdx.linalg._decomp import lu_solve
from pdx.linalg._decomp import lu_unpack
from pdx.linalg._decomp import matrix_rank
from pdx.linalg._decomp import ormqr
from pdx.linalg._decomp import pca_lowrank
from pdx.linalg._decomp import slogdet
from pdx.linalg._decomp import svd_lowrank
from pdx.linalg._decomp import svdvals
from pdx.linalg._linalg import cholesky_inverse
from pdx.linalg._linalg import cholesky_solve
from pdx.linalg._linalg import cond
from pdx.linalg._linalg import corrcoef
from pdx.linalg._linalg import cov
from pdx.linalg._linalg import matrix_exp
from pdx.ops import matrix_norm
from pdx.linalg._linalg import multi_dot
from pdx.linalg._linalg import triangular_solve
from pdx.ops import vector_norm
from pdx.ops import cholesky
from pdx.ops import cross
from pdx.ops import det
from pdx.ops import diagonal
from pdx.ops import eigvalsh
from pdx.ops import inverse as inv
from pdx.ops import matmul
from pdx.ops import matrix_power
from pdx.ops import matrix_transpose
from pdx.ops import norm
from pdx.ops import pinv
from pdx.ops import qr
from pdx.ops import solve
from pdx.ops import svd
from pdx.ops import vecdot

__all__ = [
    "cholesky",
    "cholesky_inverse",
    "cholesky_solve",
    "cond",
    "corrcoef",
    "cov",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "householder_product",
    "inv",
    "lstsq",
    "lu",
    "lu_solve",
    "lu_unpack",
    "matmul",
    "matrix_exp",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "multi_dot",
    "norm",
    "ormqr",
    "pca_lowrank",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svd_lowrank",
    "svdvals",
    "triangular_solve",
    "vecdot",
    "vector_norm",
]
