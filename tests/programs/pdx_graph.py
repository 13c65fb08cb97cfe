"""Graph message passing on Zachary's karate club: paddle.geometric.send_u_recv,
segment_sum, and a 2-layer GCN with copied weights trained for a few steps."""
import json

import networkx as nx
import numpy as np
import pdx as paddle
import pdx.nn as nn
import pdx.nn.functional as F

paddle.set_device("cpu")
graph = nx.karate_club_graph()
edges = np.array(graph.edges(), dtype="int64")
src = np.concatenate([edges[:, 0], edges[:, 1], np.arange(34)])  # both directions + self loops
dst = np.concatenate([edges[:, 1], edges[:, 0], np.arange(34)])
labels = np.array([graph.nodes[i]["club"] == "Officer" for i in range(34)], dtype="int64")
src, dst = paddle.to_tensor(src), paddle.to_tensor(dst)
feat = paddle.to_tensor(np.random.RandomState(7).randn(34, 8).astype("float32"))

deg = paddle.geometric.send_u_recv(paddle.ones([34, 1]), src, dst, reduce_op="sum")
agg_mean = paddle.geometric.send_u_recv(feat, src, dst, reduce_op="mean")
agg_max = paddle.geometric.send_u_recv(feat, src, dst, reduce_op="max")
order = paddle.argsort(dst)
seg = paddle.geometric.segment_sum(paddle.gather(feat, paddle.gather(src, order)), paddle.gather(dst, order))


class GCNConv(nn.Layer):
    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim)

    def forward(self, x, src, dst, norm):
        h = self.linear(x) * norm
        h = paddle.geometric.send_u_recv(h, src, dst, reduce_op="sum")
        return h * norm


class GCN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv1 = GCNConv(8, 16)
        self.conv2 = GCNConv(16, 2)

    def forward(self, x, src, dst, norm):
        h = F.relu(self.conv1(x, src, dst, norm))
        return self.conv2(h, src, dst, norm)


norm = paddle.pow(deg, -0.5)
model = GCN()
rng = np.random.RandomState(8)
state = model.state_dict()
model.set_state_dict({k: (rng.randn(*v.shape) * 0.3).astype("float32") for k, v in sorted(state.items())})
first_out = model(feat, src, dst, norm)
opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
y = paddle.to_tensor(labels)


def loss_fn(model, feat, y):
    return F.cross_entropy(model(feat, src, dst, norm), y)


losses = []
for step in range(5):
    loss, grads = paddle.value_and_grad(loss_fn)(model, feat, y)
    opt.step(grads)
    opt.clear_grad()
    losses.append(float(loss))
print(json.dumps({
    "deg": deg.numpy().ravel().tolist(),
    "agg_mean": agg_mean.numpy().tolist(),
    "agg_max": agg_max.numpy().tolist(),
    "segment_sum": seg.numpy().tolist(),
    "gcn_out": first_out.numpy().tolist(),
    "losses": losses,
}))
