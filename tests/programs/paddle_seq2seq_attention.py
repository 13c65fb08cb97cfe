"""Seq2seq with additive (Bahdanau) attention, trained on reversing generated
token sequences: an nn.GRU encoder, an nn.GRUCell decoder that attends over
the encoder outputs each step, teacher forcing with a padding mask, then
greedy decoding."""
import json

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F

paddle.set_device("cpu")
VOCAB, HIDDEN, SEQ, BOS, PAD = 10, 16, 5, 1, 0


class AdditiveAttention(nn.Layer):
    def __init__(self, hidden):
        super().__init__()
        self.w_query = nn.Linear(hidden, hidden, bias_attr=False)
        self.w_keys = nn.Linear(hidden, hidden, bias_attr=False)
        self.v = nn.Linear(hidden, 1, bias_attr=False)

    def forward(self, query, keys, mask):
        scores = self.v(paddle.tanh(self.w_query(query).unsqueeze(1) + self.w_keys(keys))).squeeze(-1)
        scores = paddle.where(mask, scores, paddle.full_like(scores, -1e9))
        weights = F.softmax(scores, axis=-1)
        context = paddle.bmm(weights.unsqueeze(1), keys).squeeze(1)
        return context, weights


class Seq2SeqAttn(nn.Layer):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, HIDDEN, padding_idx=PAD)
        self.encoder = nn.GRU(HIDDEN, HIDDEN)
        self.attention = AdditiveAttention(HIDDEN)
        self.decoder = nn.GRUCell(2 * HIDDEN, HIDDEN)
        self.out = nn.Linear(2 * HIDDEN, VOCAB)

    def encode(self, src):
        enc_out, enc_state = self.encoder(self.embedding(src))
        return enc_out, enc_state[-1], src != PAD

    def decode_step(self, token, state, enc_out, mask):
        context, weights = self.attention(state, enc_out, mask)
        h, state = self.decoder(paddle.concat([self.embedding(token), context], axis=-1), state)
        return self.out(paddle.concat([h, context], axis=-1)), state, weights

    def forward(self, src, tgt_in):
        enc_out, state, mask = self.encode(src)
        logits = []
        for t in range(tgt_in.shape[1]):
            step_logits, state, _ = self.decode_step(tgt_in[:, t], state, enc_out, mask)
            logits.append(step_logits)
        return paddle.stack(logits, axis=1)


def make_batch(rng, n):
    lengths = rng.randint(3, SEQ + 1, size=n)
    src = np.full((n, SEQ), PAD, dtype="int64")
    tgt = np.full((n, SEQ), PAD, dtype="int64")
    for b, length in enumerate(lengths):
        seq = rng.randint(2, VOCAB, size=length)
        src[b, :length] = seq
        tgt[b, :length] = seq[::-1]
    tgt_in = np.concatenate([np.full((n, 1), BOS, dtype="int64"), tgt[:, :-1]], axis=1)
    return src, tgt_in, tgt


def loss_fn(model, src, tgt_in, tgt):
    logits = model(src, tgt_in)
    return F.cross_entropy(logits.reshape([-1, VOCAB]), tgt.reshape([-1]), ignore_index=PAD)


model = Seq2SeqAttn()
rng = np.random.RandomState(31)
for name, param in model.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.3).astype("float32"))
opt = paddle.optimizer.Adam(learning_rate=0.01, parameters=model.parameters(),
                            grad_clip=paddle.nn.ClipGradByNorm(clip_norm=1.0))

losses = []
for step in range(30):
    src, tgt_in, tgt = (paddle.to_tensor(a) for a in make_batch(rng, 32))
    loss = loss_fn(model, src, tgt_in, tgt)
    loss.backward()
    opt.step()
    opt.clear_grad()
    losses.append(float(loss))

model.eval()
src, _, tgt = make_batch(np.random.RandomState(7), 4)
with paddle.no_grad():
    enc_out, state, mask = model.encode(paddle.to_tensor(src))
    token = paddle.full([4], BOS, dtype="int64")
    decoded, attn = [], []
    for t in range(SEQ):
        logits, state, weights = model.decode_step(token, state, enc_out, mask)
        token = logits.argmax(axis=-1)
        decoded.append(token.numpy().tolist())
        attn.append(weights[0].numpy().tolist())
print(json.dumps({
    "losses": losses,
    "decoded": np.array(decoded).T.tolist(),
    "attention_first": attn,
}))
