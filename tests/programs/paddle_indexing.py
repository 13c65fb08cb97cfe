"""Tensor indexing as Paddle code writes it: integer, negative, slice-with-step, list and
boolean-mask indices, None/Ellipsis, gather-style row picks, and the IndexError an
out-of-range index raises."""
import json

import numpy as np
import paddle

paddle.set_device("cpu")

rng = np.random.RandomState(7)
x = paddle.to_tensor(rng.randn(4, 5, 6).astype("float32"))
labels = paddle.to_tensor(np.array([2, 0, 3, 1], dtype="int64"))

picked = {
    "int": x[1].numpy().tolist(),
    "negative": x[-1, -2].numpy().tolist(),
    "step": x[:, ::2, 1:5:3].numpy().tolist(),
    "list_rows": x[[0, 3]].numpy().tolist(),
    "list_cols": x[:, [4, 0, 2], 0].numpy().tolist(),
    "ellipsis": x[..., 5].numpy().tolist(),
    "none": x[None, 2, :, 1].numpy().tolist(),
    "mask": x[x > 1.5].numpy().tolist(),
    "row_mask": x[[True, False, True, False]].numpy().tolist(),
    "tensor_index": x[paddle.to_tensor(2)].numpy().tolist(),
    "gather_rows": paddle.gather(x[:, 0, :], labels).numpy().tolist(),
}

# per-row label scores, the way a classification loss picks them
scores = x[:, 0, :4]
rows = paddle.arange(4)
picked["label_scores"] = scores[rows, labels].numpy().tolist()

errors = []
for index in (4, -5, (0, 5), (0, 0, 6)):
    try:
        x[index]
        errors.append("no error")
    except IndexError:
        errors.append("IndexError")
picked["errors"] = errors
print(json.dumps(picked))
