"""Text classification: Embedding -> LSTM -> Linear trained with
`paddle.Model.fit` on synthetic token sequences, then `predict`."""
import json

import numpy as np
import paddle
import paddle.nn as nn

paddle.set_device("cpu")
VOCAB, SEQ = 20, 8


class TokenDataset(paddle.io.Dataset):
    def __init__(self, n, seed):
        super().__init__()
        rng = np.random.RandomState(seed)
        self.tokens = rng.randint(0, VOCAB, size=(n, SEQ)).astype("int64")
        # label: is the last token in the upper half of the vocabulary?
        self.labels = (self.tokens[:, -1] >= VOCAB // 2).astype("int64").reshape([-1, 1])

    def __getitem__(self, idx):
        return self.tokens[idx], self.labels[idx]

    def __len__(self):
        return len(self.tokens)


class LSTMClassifier(nn.Layer):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, 16)
        self.lstm = nn.LSTM(16, 32)
        self.fc = nn.Linear(32, 2)

    def forward(self, tokens):
        emb = self.embedding(tokens)
        output, (h, c) = self.lstm(emb)
        return self.fc(h[-1])


net = LSTMClassifier()
rng = np.random.RandomState(3)
state = net.state_dict()
for name, param in net.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.2).astype("float32"))
model = paddle.Model(net)
model.prepare(paddle.optimizer.Adam(learning_rate=0.01, parameters=net.parameters()),
              nn.CrossEntropyLoss(), paddle.metric.Accuracy())
model.fit(TokenDataset(512, 0), epochs=4, batch_size=64, shuffle=False, verbose=0)
result = model.evaluate(TokenDataset(256, 1), batch_size=64, verbose=0)
preds = model.predict(TokenDataset(32, 2), batch_size=32, stack_outputs=True, verbose=0)
logits = np.asarray(preds[0])
print(result)
print(json.dumps({
    "param_names": sorted(state),
    "eval_loss": float(np.ravel(result["loss"])[0]),
    "eval_acc": float(result["acc"]),
    "pred_shape": list(logits.shape),
    "pred_classes": logits.argmax(-1).tolist(),
    "pred_logits": logits[:8].tolist(),
}))
