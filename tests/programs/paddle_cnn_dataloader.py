"""A LeNet-style CNN with BatchNorm on 8x8 digits: paddle.io.TensorDataset +
DataLoader, a StepDecay learning-rate schedule, paddle.metric.accuracy, and
paddle.save / paddle.load of the model and optimizer state."""
import json

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from sklearn.datasets import load_digits

paddle.set_device("cpu")
digits = load_digits()
images = (digits.data[:600] / 16.0).astype("float32").reshape([-1, 1, 8, 8])
labels = digits.target[:600].astype("int64").reshape([-1, 1])
dataset = paddle.io.TensorDataset([paddle.to_tensor(images), paddle.to_tensor(labels)])
loader = paddle.io.DataLoader(dataset, batch_size=100, shuffle=False, drop_last=False)


class LeNet(nn.Layer):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2D(1, 6, 3, stride=1, padding=1), nn.BatchNorm2D(6), nn.ReLU(),
            nn.MaxPool2D(2, 2),
            nn.Conv2D(6, 16, 3, stride=1, padding=0), nn.ReLU())
        self.fc = nn.Linear(16 * 2 * 2, num_classes)

    def forward(self, x):
        x = self.features(x)
        x = paddle.flatten(x, 1)
        return self.fc(x)


model = LeNet()
rng = np.random.RandomState(11)
state = model.state_dict()
model.set_state_dict({k: (rng.randn(*v.shape) * 0.3).astype("float32") if "_variance" not in k
                      else np.ones(v.shape, "float32") for k, v in sorted(state.items())})
scheduler = paddle.optimizer.lr.StepDecay(learning_rate=0.05, step_size=2, gamma=0.5)
opt = paddle.optimizer.Momentum(learning_rate=scheduler, momentum=0.9, parameters=model.parameters())


def loss_fn(model, x, y):
    return F.cross_entropy(model(x), y)


losses, lrs = [], []
model.train()
for epoch in range(3):
    for batch_id, (x, y) in enumerate(loader()):
        loss = loss_fn(model, x, y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    lrs.append(opt.get_lr())
    scheduler.step()

paddle.save(model.state_dict(), "lenet.pdparams")
paddle.save(opt.state_dict(), "lenet.pdopt")
restored = LeNet()
restored.set_state_dict(paddle.load("lenet.pdparams"))
opt.set_state_dict(paddle.load("lenet.pdopt"))
model.eval()
restored.eval()
x_all, y_all = paddle.to_tensor(images), paddle.to_tensor(labels)
logits = model(x_all)
acc = paddle.metric.accuracy(F.softmax(logits), y_all, k=1)
print(json.dumps({
    "losses": losses,
    "lrs": lrs,
    "accuracy": float(acc),
    "bn_mean": model.features[1]._mean.numpy().tolist(),
    "bn_variance": model.features[1]._variance.numpy().tolist(),
    "restored_logits": restored(x_all[:5]).numpy().tolist(),
    "logits": logits[:5].numpy().tolist(),
    "lr_after_load": opt.get_lr(),
    "state_keys": sorted(paddle.load("lenet.pdparams").keys()),
}))
