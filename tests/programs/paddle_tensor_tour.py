"""A tour of the Tensor API: creation, methods, indexing and common ops."""
import json

import numpy as np
import paddle

paddle.disable_static()
paddle.set_device("cpu")
on_gpu = paddle.is_compiled_with_cuda()

x = paddle.to_tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
ids = paddle.to_tensor([[3, 1, 2], [0, 2, 1]])
mask = x > 0
r = {}
r["isinstance"] = isinstance(x, paddle.Tensor)
r["shape"] = list(x.shape)
r["ndim"] = x.ndim
r["numel"] = int(x.numel())
r["is_float32"] = x.dtype == paddle.float32
r["mask_is_bool"] = mask.dtype == paddle.bool
r["numpy"] = x.numpy().tolist()
r["assign"] = paddle.assign(x).numpy().tolist()
r["add_n"] = paddle.add_n([x, x, x]).numpy().tolist()
r["index_row"] = x[1].numpy().tolist()
r["index_slice"] = x[:, 1:].numpy().tolist()
r["index_neg"] = x[-1, ::-2].numpy().tolist()
r["index_list"] = x[:, [0, 2]].numpy().tolist()
r["index_mask"] = x[mask].numpy().tolist()
r["cast"] = ids.cast("float32").numpy().tolist()
r["astype_sum"] = float(ids.astype("float32").sum())
r["expand"] = x[0:1].expand([3, 3]).numpy().tolist()
r["tile"] = x.tile([1, 2]).numpy().tolist()
r["chunk"] = [c.numpy().tolist() for c in x.chunk(3, axis=1)]
r["pow"] = x.pow(2).numpy().tolist()
r["cpu"] = x.cpu().numpy().tolist()
r["concat"] = paddle.concat([x, x * 2], axis=0).numpy().tolist()
r["stack_shape"] = list(paddle.stack([x, x], axis=1).shape)
r["where"] = paddle.where(mask, x, paddle.zeros_like(x)).numpy().tolist()
values, indices = paddle.topk(x, k=2, axis=1)
r["topk"] = [values.numpy().tolist(), indices.numpy().tolist()]
r["sort"] = paddle.sort(x, axis=1, descending=True).numpy().tolist()
r["argsort"] = paddle.argsort(x, axis=0).numpy().tolist()
r["cumsum"] = paddle.cumsum(x, axis=1).numpy().tolist()
r["mean_keepdim"] = x.mean(axis=1, keepdim=True).numpy().tolist()
r["max"] = float(x.max())
r["transpose"] = x.transpose([1, 0]).numpy().tolist()
r["reshape"] = x.reshape([3, 2]).numpy().tolist()
r["unsqueeze_shape"] = list(x.unsqueeze(0).shape)
r["matmul"] = x.matmul(x.T).numpy().tolist()
r["clip"] = x.clip(-1.0, 1.0).numpy().tolist()
r["abs_sum"] = float(paddle.abs(x).sum())
r["linspace"] = paddle.linspace(0, 1, 5).numpy().tolist()
r["arange"] = paddle.arange(0, 10, 3).numpy().tolist()
r["full"] = paddle.full([2, 2], 7.0).numpy().tolist()
r["eye"] = paddle.eye(3).numpy().tolist()
r["one_hot"] = paddle.nn.functional.one_hot(paddle.to_tensor([0, 2]), num_classes=3).numpy().tolist()
r["gather"] = paddle.gather(x, paddle.to_tensor([1, 0])).numpy().tolist()
r["take_along_axis"] = paddle.take_along_axis(x, paddle.to_tensor([[0], [2]]), axis=1).numpy().tolist()
r["item"] = x[0, 2].item()
r["tolist"] = x.tolist()
r["np_roundtrip"] = paddle.to_tensor(np.ones((2, 2), dtype="float32")).numpy().tolist()
r["on_gpu"] = on_gpu
print(json.dumps(r))
