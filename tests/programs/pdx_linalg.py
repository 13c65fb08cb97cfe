"""paddle.linalg on fixed matrices: solve, inv, det, svd, qr, eigh, norm, lstsq."""
import json

import numpy as np
import pdx as paddle

paddle.set_device("cpu")
rng = np.random.RandomState(5)
a_np = rng.randn(4, 4).astype("float32")
A = paddle.to_tensor(a_np @ a_np.T + 4 * np.eye(4, dtype="float32"))  # symmetric positive definite
B = paddle.to_tensor(rng.randn(4, 2).astype("float32"))
M = paddle.to_tensor(rng.randn(5, 3).astype("float32"))
y = paddle.to_tensor(rng.randn(5, 2).astype("float32"))

x = paddle.linalg.solve(A, B)
u, s, vh = paddle.linalg.svd(M, full_matrices=False)
q, r = paddle.linalg.qr(M)
w, v = paddle.linalg.eigh(A)
sol = paddle.linalg.lstsq(M, y)[0]
sign, logdet = paddle.linalg.slogdet(A)
print(json.dumps({
    "solve": x.numpy().tolist(),
    "residual": float(paddle.linalg.norm(paddle.matmul(A, x) - B)),
    "inv": paddle.linalg.inv(A).numpy().tolist(),
    "det": float(paddle.linalg.det(A)),
    "slogdet": [float(sign), float(logdet)],
    "svd_s": s.numpy().tolist(),
    "svd_recon": paddle.matmul(u * s.unsqueeze(0), vh).numpy().tolist(),
    "qr_shapes": [list(q.shape), list(r.shape)],
    "qr_recon": paddle.matmul(q, r).numpy().tolist(),
    "qr_r_absdiag": paddle.abs(paddle.diag(r)).numpy().tolist(),
    "eigh_w": w.numpy().tolist(),
    "eigh_v_abs": paddle.abs(v).numpy().tolist(),
    "norm_fro": float(paddle.linalg.norm(M)),
    "norm_axis": paddle.linalg.norm(M, p=2, axis=1).numpy().tolist(),
    "norm_inf": float(paddle.linalg.norm(M, p=float("inf"), axis=[0, 1])),
    "norm_nuc": float(paddle.linalg.norm(M, p="nuc", axis=[0, 1])),
    "lstsq": sol.numpy().tolist(),
    "pinv": paddle.linalg.pinv(M).numpy().tolist(),
    "matrix_power": paddle.linalg.matrix_power(A, 3).numpy().tolist(),
    "cholesky": paddle.linalg.cholesky(A).numpy().tolist(),
    "cond": float(paddle.linalg.cond(A)),
}))
