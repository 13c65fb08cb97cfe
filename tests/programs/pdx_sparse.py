"""paddle.sparse: a COO tensor, sparse @ dense, sparse + sparse, to_dense and a
sparse softmax."""
import json

import numpy as np
import pdx as paddle

paddle.set_device("cpu")
indices = [[0, 1, 1, 2, 2], [1, 0, 3, 2, 3]]
values = [1.0, 2.0, -1.0, 3.0, 4.0]
sp = paddle.sparse.sparse_coo_tensor(indices, values, shape=[3, 4])
sp2 = paddle.sparse.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], [10.0, 20.0, 30.0], shape=[3, 4])
dense = paddle.to_tensor(np.arange(8, dtype="float32").reshape([4, 2]) / 4.0)

try:
    product = paddle.sparse.matmul(sp, dense)
except RuntimeError:  # paddle's CPU build has no COO @ dense kernel: the same product densely
    product = paddle.matmul(sp.to_dense(), dense)
total = paddle.sparse.add(sp, sp2)
csr = sp.to_sparse_csr()
soft = paddle.sparse.nn.functional.softmax(csr)
relu = paddle.sparse.nn.functional.relu(sp)
print(json.dumps({
    "is_sparse": [sp.is_sparse_coo(), csr.is_sparse_csr()],
    "nnz": int(sp.nnz()),
    "shape": list(sp.shape),
    "indices": paddle.sparse.indices(sp).numpy().tolist(),
    "values": sp.values().numpy().tolist(),
    "dense": sp.to_dense().numpy().tolist(),
    "matmul": product.numpy().tolist(),
    "add": total.to_dense().numpy().tolist(),
    "crows": csr.crows().numpy().tolist(),
    "cols": csr.cols().numpy().tolist(),
    "softmax": soft.to_dense().numpy().tolist(),
    "relu": relu.to_dense().numpy().tolist(),
}))
