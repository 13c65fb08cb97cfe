"""A small Transformer encoder classifier: Embedding, nn.TransformerEncoder with
an attention mask, AdamW with ClipGradByGlobalNorm and a LinearWarmup schedule."""
import json

import numpy as np
import pdx as paddle
import pdx.nn as nn
import pdx.nn.functional as F

paddle.set_device("cpu")
VOCAB, SEQ, DIM = 30, 10, 32


class Classifier(nn.Layer):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, DIM)
        self.pos = self.create_parameter(shape=[1, SEQ, DIM])
        layer = nn.TransformerEncoderLayer(d_model=DIM, nhead=4, dim_feedforward=64, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(DIM, 3)

    def forward(self, tokens, mask):
        h = self.encoder(self.embedding(tokens) + self.pos, src_mask=mask)
        return self.head(h.mean(axis=1))


model = Classifier()
rng = np.random.RandomState(12)
state = model.state_dict()
model.set_state_dict({k: (rng.randn(*v.shape) * 0.1).astype("float32") for k, v in sorted(state.items())})
tokens = paddle.to_tensor(rng.randint(1, VOCAB, size=(8, SEQ)).astype("int64"))
labels = paddle.to_tensor((tokens.numpy()[:, :3].sum(1) % 3).astype("int64"))
lengths = np.array([10, 10, 8, 6, 10, 7, 9, 5])
pad = np.arange(SEQ)[None, :] >= lengths[:, None]  # True where padding
mask = paddle.to_tensor(np.where(pad, -1e9, 0.0).astype("float32")[:, None, None, :])

scheduler = paddle.optimizer.lr.LinearWarmup(learning_rate=0.01, warmup_steps=3, start_lr=0.001, end_lr=0.01)
opt = paddle.optimizer.AdamW(learning_rate=scheduler, parameters=model.parameters(), weight_decay=0.01,
                             grad_clip=nn.ClipGradByGlobalNorm(clip_norm=1.0))


def loss_fn(model, tokens, mask, labels):
    return F.cross_entropy(model(tokens, mask), labels)


model.eval()
first_logits = model(tokens, mask)
losses = []
for step in range(6):
    loss, grads = paddle.value_and_grad(loss_fn)(model, tokens, mask, labels)
    opt.step(grads)
    opt.clear_grad()
    scheduler.step()
    losses.append(float(loss))
print(json.dumps({
    "n_params": sum(int(np.prod(p.shape)) for p in model.parameters()),
    "first_logits": first_logits.numpy().tolist(),
    "losses": losses,
    "final_logits": model(tokens, mask).numpy().tolist(),
}))
