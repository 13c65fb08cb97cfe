"""Skip-gram word2vec with negative sampling on a generated corpus: center and
context nn.Embedding tables (sparse=True), negatives drawn with numpy from the
unigram^0.75 distribution, F.log_sigmoid of paddle.bmm scores, trained with
SGD; nearest neighbours by cosine similarity with paddle.topk."""
import json

import numpy as np
import pdx as paddle
import pdx.nn as nn
import pdx.nn.functional as F
from pdx.io import DataLoader, Dataset

paddle.set_device("cpu")
VOCAB, DIM, WINDOW, NEG = 24, 10, 2, 4
rng = np.random.RandomState(41)
# four "topics" of six words each; a sentence mostly stays in one topic
corpus = []
for _ in range(150):
    topic = rng.randint(4)
    words = np.where(rng.rand(8) < 0.85, topic * 6 + rng.randint(0, 6, size=8), rng.randint(0, VOCAB, size=8))
    corpus.append(words)
counts = np.bincount(np.concatenate(corpus), minlength=VOCAB).astype("float64")
noise = counts ** 0.75 / (counts ** 0.75).sum()


class SkipGramDataset(Dataset):
    def __init__(self):
        self.pairs = [(s[i], s[j]) for s in corpus for i in range(len(s))
                      for j in range(max(0, i - WINDOW), min(len(s), i + WINDOW + 1)) if i != j]
        self.negatives = rng.choice(VOCAB, size=(len(self.pairs), NEG), p=noise)

    def __getitem__(self, idx):
        center, context = self.pairs[idx]
        return np.array(center, dtype="int64"), np.array(context, dtype="int64"), self.negatives[idx].astype("int64")

    def __len__(self):
        return len(self.pairs)


class SkipGram(nn.Layer):
    def __init__(self):
        super().__init__()
        self.center = nn.Embedding(VOCAB, DIM, sparse=True)
        self.context = nn.Embedding(VOCAB, DIM, sparse=True)

    def forward(self, center, context, negatives):
        c = self.center(center).unsqueeze(2)
        pos = paddle.bmm(self.context(context).unsqueeze(1), c).squeeze([1, 2])
        neg = paddle.bmm(self.context(negatives), c).squeeze(2)
        return -(F.log_sigmoid(pos) + F.log_sigmoid(-neg).sum(axis=1)).mean()


def loss_fn(model, center, context, negatives):
    return model(center, context, negatives)


model = SkipGram()
for name, param in model.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.3).astype("float32"))
opt = paddle.optimizer.SGD(learning_rate=5.0, parameters=model.parameters())
dataset = SkipGramDataset()
loader = DataLoader(dataset, batch_size=512, shuffle=False)

losses = []
for epoch in range(3):
    for center, context, negatives in loader:
        loss, grads = paddle.value_and_grad(loss_fn)(model, center, context, negatives)
        opt.step(grads)
        opt.clear_grad()
        losses.append(float(loss))

emb = F.normalize(model.center.weight, axis=1)
sim = paddle.matmul(emb, emb, transpose_y=True)
_, neighbours = paddle.topk(sim, k=4, axis=1)
same_topic = float(np.mean(neighbours[:, 1:].numpy() // 6 == np.arange(VOCAB)[:, None] // 6))
print(json.dumps({
    "n_pairs": len(dataset),
    "losses": losses,
    "same_topic": same_topic,
    "sim_head": sim[0, :6].numpy().tolist(),
}))
