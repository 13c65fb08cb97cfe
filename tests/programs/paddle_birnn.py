"""Sentiment-tutorial recurrent layers: a 2-layer bidirectional LSTM and GRU
over padded batches with `sequence_length`, and one SGD step."""
import json

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F

paddle.set_device("cpu")


class Encoder(nn.Layer):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(50, 12, padding_idx=0)
        self.lstm = nn.LSTM(12, 16, num_layers=2, direction="bidirect")
        self.gru = nn.GRU(32, 8, direction="bidirectional", time_major=False)
        self.fc = nn.Linear(16, 2)

    def forward(self, tokens, seq_len):
        emb = self.embedding(tokens)
        out, (h, c) = self.lstm(emb, sequence_length=seq_len)
        out2, h2 = self.gru(out, sequence_length=seq_len)
        pooled = paddle.concat([h2[0], h2[1]], axis=-1)
        return self.fc(pooled), out, h, c


model = Encoder()
rng = np.random.RandomState(14)
for name, param in model.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.3).astype("float32"))
lengths = np.array([7, 3, 5, 1])
tokens = rng.randint(1, 50, size=(4, 7))
tokens[np.arange(7)[None, :] >= lengths[:, None]] = 0
tokens = paddle.to_tensor(tokens.astype("int64"))
seq_len = paddle.to_tensor(lengths.astype("int64"))
labels = paddle.to_tensor(np.array([0, 1, 1, 0], dtype="int64"))
logits, out, h, c = model(tokens, seq_len)
opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())


def loss_fn(model, tokens, seq_len, labels):
    return F.cross_entropy(model(tokens, seq_len)[0], labels)


losses = []
for step in range(3):
    loss = loss_fn(model, tokens, seq_len, labels)
    loss.backward()
    opt.step()
    opt.clear_grad()
    losses.append(float(loss))
print(json.dumps({
    "logits": logits.numpy().tolist(),
    "out_shape": list(out.shape),
    "out": out.numpy().tolist(),
    "h": h.numpy().tolist(),
    "c": c.numpy().tolist(),
    "losses": losses,
}))
