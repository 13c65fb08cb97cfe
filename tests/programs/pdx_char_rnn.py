"""A character-level language model: nn.RNN over an nn.LSTMCell, the output
projection tied to the embedding table (matmul with transpose_y), initial
states passed explicitly and carried between chunks (truncated BPTT with
.detach()), perplexity, and greedy generation one character at a time."""
import json
import math

import numpy as np
import pdx as paddle
import pdx.nn as nn
import pdx.nn.functional as F

paddle.set_device("cpu")
TEXT = "the quick brown fox jumps over the lazy dog. " * 12
CHARS = sorted(set(TEXT))
STOI = {c: i for i, c in enumerate(CHARS)}
VOCAB, DIM, CHUNK, BATCH = len(CHARS), 24, 12, 4
data = np.array([STOI[c] for c in TEXT], dtype="int64")


class CharLM(nn.Layer):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, DIM)
        self.rnn = nn.RNN(nn.LSTMCell(DIM, DIM))
        self.out_bias = self.create_parameter([VOCAB], is_bias=True)

    def forward(self, tokens, states):
        out, states = self.rnn(self.embedding(tokens), initial_states=states)
        logits = paddle.matmul(out, self.embedding.weight, transpose_y=True) + self.out_bias
        return logits, states


def lm_loss(model, x, y, states):
    logits, new_states = model(x, states)
    return F.cross_entropy(logits.reshape([-1, VOCAB]), y.reshape([-1]))


model = CharLM()
rng = np.random.RandomState(37)
for name, param in model.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.2).astype("float32"))
opt = paddle.optimizer.Adam(learning_rate=0.02, parameters=model.parameters())

stream = data[:len(data) // BATCH * BATCH].reshape([BATCH, -1])
losses = []
for epoch in range(2):
    states = (paddle.zeros([BATCH, DIM]), paddle.zeros([BATCH, DIM]))
    for start in range(0, stream.shape[1] - CHUNK - 1, CHUNK):
        x = paddle.to_tensor(stream[:, start:start + CHUNK])
        y = paddle.to_tensor(stream[:, start + 1:start + CHUNK + 1])
        loss, grads = paddle.value_and_grad(lm_loss)(model, x, y, states)
        opt.step(grads)
        opt.clear_grad()
        with paddle.no_grad():
            _, states = model(x, states)
        states = tuple(s.detach() for s in states)
        losses.append(float(loss))

model.eval()
with paddle.no_grad():
    tokens = paddle.to_tensor(np.array([[STOI[c] for c in "the "]], dtype="int64"))
    logits, states = model(tokens, None)
    generated = "the "
    for _ in range(20):
        nxt = logits[:, -1].argmax(axis=-1, keepdim=True)
        generated += CHARS[int(nxt[0, 0])]
        logits, states = model(nxt, states)
print(json.dumps({
    "losses": losses,
    "perplexity": math.exp(losses[-1]),
    "generated": generated,
    "final_state_norm": float(states[0].norm()),
}))
