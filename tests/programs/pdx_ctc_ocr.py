"""OCR-style sequence recognition with CTC: generated "text line" images (each
symbol a fixed column pattern), a small Conv2D feature extractor, a
bidirectional GRU over the width, F.ctc_loss on log-softmax outputs (blank
0) and greedy CTC decoding."""
import json

import numpy as np
import pdx as paddle
import pdx.nn as nn
import pdx.nn.functional as F

paddle.set_device("cpu")
N_SYMBOLS, HEIGHT, MAX_LEN = 4, 8, 4
glyphs = np.random.RandomState(0).rand(N_SYMBOLS + 1, HEIGHT, 3) > 0.5


def make_batch(rng, n):
    width = 4 * MAX_LEN
    images = np.zeros((n, 1, HEIGHT, width), dtype="float32")
    labels = np.zeros((n, MAX_LEN), dtype="int32")
    lengths = rng.randint(2, MAX_LEN + 1, size=n)
    for b in range(n):
        for k in range(lengths[b]):
            sym = rng.randint(1, N_SYMBOLS + 1)
            labels[b, k] = sym
            images[b, 0, :, 4 * k:4 * k + 3] = glyphs[sym]
    images += 0.1 * rng.rand(*images.shape).astype("float32")
    return images, labels, lengths.astype("int64")


class CRNN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2D(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2D((2, 1)),
                                  nn.Conv2D(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2D((2, 1)))
        self.rnn = nn.GRU(16 * (HEIGHT // 4), 16, direction="bidirect")
        self.fc = nn.Linear(32, N_SYMBOLS + 1)

    def forward(self, x):
        f = self.conv(x)
        b, c, h, w = f.shape
        f = f.transpose([0, 3, 1, 2]).reshape([b, w, c * h])
        out, _ = self.rnn(f)
        return self.fc(out)


def ctc_loss_fn(model, images, labels, label_lengths):
    logits = model(images)
    log_probs = F.log_softmax(logits, axis=-1).transpose([1, 0, 2])
    input_lengths = paddle.full([images.shape[0]], logits.shape[1], dtype="int64")
    return F.ctc_loss(log_probs, labels, input_lengths, label_lengths, blank=0, reduction="mean")


def greedy_decode(logits):
    best = logits.argmax(axis=-1).numpy()
    out = []
    for row in best:
        seq, prev = [], 0
        for s in row:
            if s != prev and s != 0:
                seq.append(int(s))
            prev = s
        out.append(seq)
    return out


model = CRNN()
rng = np.random.RandomState(9)
for name, param in model.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.2).astype("float32"))
opt = paddle.optimizer.Adam(learning_rate=0.01, parameters=model.parameters())

losses = []
for step in range(40):
    images, labels, lengths = make_batch(rng, 16)
    loss, grads = paddle.value_and_grad(ctc_loss_fn)(model, paddle.to_tensor(images), paddle.to_tensor(labels), paddle.to_tensor(lengths))
    opt.step(grads)
    opt.clear_grad()
    losses.append(float(loss))

model.eval()
images, labels, lengths = make_batch(np.random.RandomState(99), 4)
with paddle.no_grad():
    logits = model(paddle.to_tensor(images))
print(json.dumps({
    "losses": losses,
    "logits_shape": list(logits.shape),
    "decoded": greedy_decode(logits),
    "log_prob_head": F.log_softmax(logits, axis=-1)[0, :3].numpy().tolist(),
}))
