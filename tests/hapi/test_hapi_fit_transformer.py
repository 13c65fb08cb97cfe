"""A Transformer encoder in Paddle's tutorial style — its sinusoidal positional
table a plain tensor attribute (`self.pe = paddle.to_tensor(table)`, not a
parameter, not saved) — trained by `pdx.Model.fit` and by `paddle.Model.fit`
from the same weights on the same batches: the per-step losses agree."""

import numpy as np
import pytest

import pdx

VOCAB, SEQ, DIM, HEADS, FF, CLASSES = 20, 8, 16, 2, 32, 3
SAMPLES, BATCH, EPOCHS = 24, 8, 4


def sinusoid_table(length, dim):
    pos = np.arange(length)[:, None]
    div = np.exp(np.arange(0, dim, 2) * (-np.log(10000.0) / dim))
    table = np.zeros((length, dim), "float32")
    table[:, 0::2] = np.sin(pos * div)
    table[:, 1::2] = np.cos(pos * div)
    return table


def classifier(fw):
    nn = fw.nn

    class Classifier(nn.Layer):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(VOCAB, DIM)
            self.pe = fw.to_tensor(sinusoid_table(SEQ, DIM))  # a plain tensor attribute
            layer = nn.TransformerEncoderLayer(DIM, HEADS, FF, dropout=0.0)
            self.encoder = nn.TransformerEncoder(layer, num_layers=2)
            self.head = nn.Linear(DIM, CLASSES)

        def forward(self, tokens):
            h = self.embedding(tokens) * (DIM ** 0.5) + self.pe[: tokens.shape[1]]
            return self.head(self.encoder(h).mean(axis=1))

    return Classifier()


def _data():
    rng = np.random.default_rng(5)
    tokens = rng.integers(0, VOCAB, (SAMPLES, SEQ))
    labels = (tokens[:, :2].sum(1) % CLASSES)[:, None]
    return tokens, labels


def _paddle_fit(paddle, weights):
    net = classifier(paddle)
    own = net.state_dict()
    assert sorted(own) == sorted(weights) and "pe" not in own
    net.set_state_dict({k: paddle.to_tensor(v) for k, v in weights.items()})
    tokens, labels = _data()
    losses = []

    class Record(paddle.callbacks.Callback):
        def on_train_batch_end(self, step, logs=None):
            losses.append(float(np.asarray(logs["loss"]).reshape(-1)[0]))

    model = paddle.Model(net)
    model.prepare(paddle.optimizer.Adam(5e-3, parameters=net.parameters()), paddle.nn.CrossEntropyLoss())
    data = paddle.io.TensorDataset([paddle.to_tensor(tokens.astype("int64")), paddle.to_tensor(labels.astype("int64"))])
    model.fit(data, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0, callbacks=[Record()])
    return np.array(losses)


def _pdx_fit(weights):
    net = classifier(pdx)
    assert sorted(net.state_dict()) == sorted(weights)
    net.set_state_dict(weights)
    tokens, labels = _data()
    losses = []

    class Record(pdx.callbacks.Callback):
        def on_train_batch_end(self, step, logs=None):
            losses.append(float(np.asarray(logs["loss"]).reshape(-1)[0]))

    model = pdx.Model(net)
    model.prepare(pdx.optimizer.Adam(5e-3, parameters=net.parameters()), pdx.nn.CrossEntropyLoss())
    data = pdx.io.TensorDataset([tokens.astype("int32"), labels.astype("int32")])
    model.fit(data, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0, callbacks=[Record()])
    return np.array(losses), model


def test_transformer_with_plain_tensor_table_fits_like_paddle(paddle):
    pdx.seed(0)
    weights = {k: np.asarray(v) for k, v in classifier(pdx).state_dict().items()}
    want = _paddle_fit(paddle, weights)
    got, model = _pdx_fit(weights)
    assert len(got) == len(want) == EPOCHS * SAMPLES // BATCH
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert want[-3:].mean() < want[:3].mean()  # it trained
    # the table is model state pdx carries (TrainState buffers), never trained nor saved
    assert "pe" in model.train_state.buffers and "pe" not in model.network.state_dict()
    np.testing.assert_array_equal(model.network.pe, sinusoid_table(SEQ, DIM))
