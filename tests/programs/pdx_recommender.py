"""Matrix-factorisation recommendation on generated ratings: user and item
nn.Embedding tables with biases, a dot-product score, BCEWithLogits on
clicked / not clicked, a paddle.io.Dataset of (user, item, label) triples
batched by a DataLoader, trained with Adagrad and ranked with paddle.topk."""
import json

import numpy as np
import pdx as paddle
import pdx.nn as nn
import pdx.nn.functional as F
from pdx.io import DataLoader, Dataset

paddle.set_device("cpu")
N_USERS, N_ITEMS, DIM = 30, 40, 8

truth = np.random.RandomState(2)
user_taste = truth.randn(N_USERS, 3)
item_kind = truth.randn(N_ITEMS, 3)
clicked = (user_taste @ item_kind.T + 0.3 * truth.randn(N_USERS, N_ITEMS)) > 0


class ClickDataset(Dataset):
    def __init__(self, pairs):
        self.pairs = pairs

    def __getitem__(self, idx):
        u, i = self.pairs[idx]
        return np.array(u, dtype="int64"), np.array(i, dtype="int64"), np.array([clicked[u, i]], dtype="float32")

    def __len__(self):
        return len(self.pairs)


class MF(nn.Layer):
    def __init__(self):
        super().__init__()
        self.user_emb = nn.Embedding(N_USERS, DIM)
        self.item_emb = nn.Embedding(N_ITEMS, DIM)
        self.user_bias = nn.Embedding(N_USERS, 1)
        self.item_bias = nn.Embedding(N_ITEMS, 1)

    def forward(self, users, items):
        dot = paddle.sum(self.user_emb(users) * self.item_emb(items), axis=-1, keepdim=True)
        return dot + self.user_bias(users) + self.item_bias(items)


pairs = [(u, i) for u in range(N_USERS) for i in range(N_ITEMS)]
order = truth.permutation(len(pairs))
train_pairs = [pairs[k] for k in order[:960]]
test_pairs = [pairs[k] for k in order[960:]]
loader = DataLoader(ClickDataset(train_pairs), batch_size=120, shuffle=False)

model = MF()
rng = np.random.RandomState(4)
for name, param in model.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.1).astype("float32"))
opt = paddle.optimizer.Adagrad(learning_rate=0.2, parameters=model.parameters())
loss_fn = nn.BCEWithLogitsLoss()


def train_loss(model, users, items, labels):
    return loss_fn(model(users, items), labels)


losses = []
for epoch in range(4):
    for users, items, labels in loader:
        loss, grads = paddle.value_and_grad(train_loss)(model, users, items, labels)
        opt.step(grads)
        opt.clear_grad()
        losses.append(float(loss))

model.eval()
with paddle.no_grad():
    tu = paddle.to_tensor(np.array([p[0] for p in test_pairs], dtype="int64"))
    ti = paddle.to_tensor(np.array([p[1] for p in test_pairs], dtype="int64"))
    prob = F.sigmoid(model(tu, ti)).squeeze(-1)
    labels = np.array([clicked[u, i] for u, i in test_pairs])
    acc = float(((prob.numpy() > 0.5) == labels).mean())
    scores = paddle.matmul(model.user_emb.weight[:3], model.item_emb.weight, transpose_y=True)
    top_scores, top_items = paddle.topk(scores, k=5, axis=1)
print(json.dumps({
    "losses": losses,
    "test_accuracy": acc,
    "prob_head": prob[:10].numpy().tolist(),
    "top_scores": top_scores.numpy().tolist(),
    "top_items": top_items.numpy().tolist(),
}))
