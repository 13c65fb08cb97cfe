"""High-level API extras: a binary classifier with paddle.metric.Precision /
Recall, a CosineAnnealingDecay schedule, EarlyStopping and ModelCheckpoint
callbacks, Model.save / Model.load, and paddle.io.random_split."""
import json

import numpy as np
import pdx as paddle
import pdx.nn as nn
from sklearn.datasets import load_breast_cancer

paddle.set_device("cpu")
data = load_breast_cancer()
features = ((data.data - data.data.mean(0)) / data.data.std(0)).astype("float32")
targets = data.target.astype("float32").reshape([-1, 1])


class CancerDataset(paddle.io.Dataset):
    def __init__(self, x, y):
        super().__init__()
        self.x, self.y = x, y

    def __getitem__(self, idx):
        return self.x[idx], self.y[idx]

    def __len__(self):
        return len(self.x)


full = CancerDataset(features, targets)
train_ds, val_ds = paddle.io.Subset(full, list(range(400))), paddle.io.Subset(full, list(range(400, 569)))
parts = paddle.io.random_split(full, [469, 100])


class Prob(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(30, 16)
        self.fc2 = nn.Linear(16, 1)

    def forward(self, x):
        return nn.functional.sigmoid(self.fc2(nn.functional.relu(self.fc1(x))))


net = Prob()
rng = np.random.RandomState(16)
state = net.state_dict()
net.set_state_dict({k: (rng.randn(*v.shape) * 0.2).astype("float32") for k, v in sorted(state.items())})
model = paddle.Model(net)
scheduler = paddle.optimizer.lr.CosineAnnealingDecay(learning_rate=0.05, T_max=4)
model.prepare(paddle.optimizer.Adam(learning_rate=scheduler, parameters=net.parameters()),
              nn.BCELoss(), [paddle.metric.Precision(), paddle.metric.Recall()])
callbacks = [paddle.callbacks.EarlyStopping(monitor="loss", mode="min", patience=10, save_best_model=False),
             paddle.callbacks.ModelCheckpoint(save_freq=2, save_dir="checkpoints"),
             paddle.callbacks.LRScheduler(by_step=False, by_epoch=True)]
model.fit(train_ds, epochs=4, batch_size=50, shuffle=False, verbose=0, callbacks=callbacks)
result = model.evaluate(val_ds, batch_size=169, verbose=0)
model.save("final/model")
restored = paddle.Model(Prob())
restored.prepare(metrics=[paddle.metric.Precision(), paddle.metric.Recall()], loss=nn.BCELoss())
restored.load("final/model")
probs = np.asarray(restored.predict(val_ds, batch_size=169, stack_outputs=True, verbose=0)[0])
print(json.dumps({
    "split_sizes": [len(p) for p in parts],
    "eval_loss": float(np.ravel(result["loss"])[0]),
    "precision": float(result["precision"]),
    "recall": float(result["recall"]),
    "lr_end": float(scheduler()),
    "probs_head": probs[:10, 0].tolist(),
    "probs_mean": float(probs.mean()),
}))
