"""Text matching with a siamese encoder: one embedding + Conv1D + max-pool
encoder shared by query and documents, F.cosine_similarity scores, a
MarginRankingLoss between matching and non-matching documents, trained with
AdamW (weight decay)."""
import json

import numpy as np
import pdx as paddle
import pdx.nn as nn
import pdx.nn.functional as F
from pdx.io import DataLoader, Dataset

paddle.set_device("cpu")
VOCAB, EMB, SEQ, TOPICS = 40, 16, 8, 4


def sentence(topic, rng):
    words = rng.randint(topic * 10, topic * 10 + 10, size=SEQ)
    words[rng.rand(SEQ) < 0.3] = rng.randint(0, VOCAB)
    return words.astype("int64")


class TripletDataset(Dataset):
    def __init__(self, n, seed):
        rng = np.random.RandomState(seed)
        self.items = []
        for _ in range(n):
            topic = rng.randint(TOPICS)
            other = (topic + rng.randint(1, TOPICS)) % TOPICS
            self.items.append((sentence(topic, rng), sentence(topic, rng), sentence(other, rng)))

    def __getitem__(self, idx):
        return self.items[idx]

    def __len__(self):
        return len(self.items)


class Encoder(nn.Layer):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, EMB)
        self.conv = nn.Conv1D(EMB, 24, 3, padding=1)
        self.proj = nn.Linear(24, 16)

    def forward(self, tokens):
        x = self.embedding(tokens).transpose([0, 2, 1])
        x = F.relu(self.conv(x))
        x = F.adaptive_max_pool1d(x, 1).squeeze(-1)
        return self.proj(x)


class Siamese(nn.Layer):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()

    def forward(self, query, doc):
        return F.cosine_similarity(self.encoder(query), self.encoder(doc), axis=-1)


model = Siamese()
rng = np.random.RandomState(13)
for name, param in model.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.2).astype("float32"))
opt = paddle.optimizer.AdamW(learning_rate=0.01, weight_decay=0.05, parameters=model.parameters())
ranking = nn.MarginRankingLoss(margin=0.3)
loader = DataLoader(TripletDataset(256, 0), batch_size=32, shuffle=False)


def loss_fn(model, query, pos, neg):
    pos_sim, neg_sim = model(query, pos), model(query, neg)
    return ranking(pos_sim, neg_sim, paddle.ones_like(pos_sim))


losses = []
for epoch in range(3):
    for query, pos, neg in loader:
        loss, grads = paddle.value_and_grad(loss_fn)(model, query, pos, neg)
        opt.step(grads)
        opt.clear_grad()
        losses.append(float(loss))

model.eval()
test = TripletDataset(64, 1)
q, p, n = (paddle.to_tensor(np.stack(col)) for col in zip(*test.items))
with paddle.no_grad():
    pos_sim, neg_sim = model(q, p), model(q, n)
print(json.dumps({
    "losses": losses,
    "pair_accuracy": float((pos_sim > neg_sim).astype("float32").mean()),
    "pos_sim": pos_sim[:8].numpy().tolist(),
    "neg_sim": neg_sim[:8].numpy().tolist(),
    "emb_norm": float(model.encoder.embedding.weight.norm()),
}))
