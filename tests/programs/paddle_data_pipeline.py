"""paddle.io building blocks a data tutorial walks through: TensorDataset,
Subset, ConcatDataset, ComposeDataset, an IterableDataset, a custom
collate_fn padding variable-length sequences, a BatchSampler over a
SequenceSampler, DataLoader(batch_sampler=...), and a text classifier
trained on the padded batches with a length mask."""
import json

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle.io import (BatchSampler, ComposeDataset, ConcatDataset, DataLoader, Dataset, IterableDataset,
                       SequenceSampler, Subset, TensorDataset)

paddle.set_device("cpu")
VOCAB = 20
rng = np.random.RandomState(11)


class VarLenDataset(Dataset):
    """Sequences of 2..8 tokens; the label says whether token 3 occurs."""

    def __init__(self, n, seed):
        r = np.random.RandomState(seed)
        self.seqs = [r.randint(1, VOCAB, size=r.randint(2, 9)).astype("int64") for _ in range(n)]

    def __getitem__(self, idx):
        seq = self.seqs[idx]
        return seq, np.array(int(3 in seq), dtype="int64")

    def __len__(self):
        return len(self.seqs)


class Counter(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        for i in range(self.n):
            yield np.array([i, i * i], dtype="float32")


def pad_collate(batch):
    longest = max(len(seq) for seq, _ in batch)
    tokens = np.zeros((len(batch), longest), dtype="int64")
    for b, (seq, _) in enumerate(batch):
        tokens[b, :len(seq)] = seq
    lengths = np.array([len(seq) for seq, _ in batch], dtype="int64")
    labels = np.stack([label for _, label in batch])
    return tokens, lengths, labels


class BagClassifier(nn.Layer):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, 12, padding_idx=0)
        self.fc = nn.Linear(12, 2)

    def forward(self, tokens, lengths):
        mask = (paddle.arange(tokens.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)).astype("float32")
        emb = self.embedding(tokens) * mask.unsqueeze(-1)
        pooled = emb.max(axis=1)
        return self.fc(pooled)


features = paddle.to_tensor(rng.randn(10, 3).astype("float32"))
targets = paddle.to_tensor(np.arange(10, dtype="int64"))
tensor_ds = TensorDataset([features, targets])
subset = Subset(tensor_ds, indices=[1, 3, 5])
both = ConcatDataset([subset, Subset(tensor_ds, indices=[0, 9])])
composed = ComposeDataset([VarLenDataset(5, 1), VarLenDataset(5, 2)])
iter_batches = [b.numpy().tolist() for b in DataLoader(Counter(5), batch_size=2)]

train_set = VarLenDataset(240, 0)
sampler = BatchSampler(sampler=SequenceSampler(train_set), batch_size=40, drop_last=False)
loader = DataLoader(train_set, batch_sampler=sampler, collate_fn=pad_collate)

model = BagClassifier()
for name, param in model.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.3).astype("float32"))
opt = paddle.optimizer.Adam(learning_rate=0.05, parameters=model.parameters())


def loss_fn(model, tokens, lengths, labels):
    return F.cross_entropy(model(tokens, lengths), labels)


losses, shapes = [], []
for epoch in range(4):
    for tokens, lengths, labels in loader:
        loss = loss_fn(model, tokens, lengths, labels)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
        shapes.append(list(tokens.shape))

test_tokens, test_lengths, test_labels = pad_collate([VarLenDataset(100, 5)[i] for i in range(100)])
with paddle.no_grad():
    pred = model(paddle.to_tensor(test_tokens), paddle.to_tensor(test_lengths)).argmax(axis=-1).numpy()
print(json.dumps({
    "tensor_item": [np.asarray(v).tolist() for v in tensor_ds[2]],
    "subset_targets": [int(np.asarray(both[i][1])) for i in range(len(both))],
    "composed_len": len(composed),
    "composed_item_len": len(composed[0]),
    "iter_batches": iter_batches,
    "n_batches": len(loader),
    "shapes": shapes[:6],
    "losses": losses,
    "accuracy": float((pred == test_labels).mean()),
}))
