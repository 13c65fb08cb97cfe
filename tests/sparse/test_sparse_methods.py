"""Paddle's sparse Tensor methods on BCOO / BCSR, against paddle.sparse's."""

import os
import subprocess
import sys

import numpy as np

import pdx


def test_sparse_methods_match_paddle(paddle):
    idx, val = [[0, 1, 2, 2], [1, 2, 0, 2]], [1.0, 2.0, 3.0, -1.0]
    ours = pdx.sparse.sparse_coo_tensor(idx, val, [3, 3])
    theirs = paddle.sparse.sparse_coo_tensor(idx, val, [3, 3])
    np.testing.assert_array_equal(np.asarray(ours.to_dense()), theirs.to_dense().numpy())
    np.testing.assert_array_equal(ours.numpy(), theirs.to_dense().numpy())
    np.testing.assert_array_equal(np.asarray(ours.values()), theirs.values().numpy())
    assert ours.nnz() == theirs.nnz() and ours.is_sparse() and ours.is_sparse_coo() and not ours.is_sparse_csr()
    assert ours.is_coalesced() == theirs.is_coalesced() and ours.coalesce().is_coalesced()
    csr, pcsr = ours.to_sparse_csr(), theirs.to_sparse_csr()
    np.testing.assert_array_equal(np.asarray(csr.crows()), pcsr.crows().numpy())
    np.testing.assert_array_equal(np.asarray(csr.cols()), pcsr.cols().numpy())
    np.testing.assert_array_equal(np.asarray(csr.values()), pcsr.values().numpy())
    assert csr.is_sparse_csr() and not csr.is_dense()
    np.testing.assert_array_equal(np.asarray(csr.to_sparse_coo(2).to_dense()), theirs.to_dense().numpy())


def test_switch_leaves_sparse_types_untouched():
    code = "import pdx; from jax.experimental.sparse import BCOO; print(hasattr(BCOO, 'to_dense'))"
    env = dict(os.environ, PDX_TENSOR_METHODS="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "False", out.stderr
