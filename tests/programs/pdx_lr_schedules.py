"""Training utilities a tutorial shows on one model: a custom Dataset applying
paddle.vision.transforms (Compose, Normalize, a random-free Transpose) to
digits images, LinearWarmup around CosineAnnealingDecay stepped per batch,
ReduceOnPlateau on the validation loss, ClipGradByGlobalNorm and L2Decay
weight decay on SGD with momentum, and the learning rate recorded per step."""
import json

import numpy as np
import pdx as paddle
import pdx.nn as nn
import pdx.nn.functional as F
import pdx.vision.transforms as T
from pdx.io import DataLoader, Dataset
from sklearn.datasets import load_digits

paddle.set_device("cpu")
digits = load_digits()


class DigitsDataset(Dataset):
    def __init__(self, start, stop, transform=None):
        self.images = (digits.images[start:stop, :, :, None] / 16.0).astype("float32")
        self.labels = digits.target[start:stop].astype("int64")
        self.transform = transform

    def __getitem__(self, idx):
        image = self.images[idx]
        if self.transform is not None:
            image = self.transform(image)
        return image, self.labels[idx]

    def __len__(self):
        return len(self.labels)


transform = T.Compose([T.Transpose(), T.Normalize(mean=[0.3], std=[0.4], data_format="CHW")])
train_loader = DataLoader(DigitsDataset(0, 640, transform), batch_size=64, shuffle=False)
val_loader = DataLoader(DigitsDataset(640, 896, transform), batch_size=128, shuffle=False)


class SmallCNN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(1, 8, 3, padding=1)
        self.pool = nn.MaxPool2D(2)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        return self.fc(paddle.flatten(self.pool(F.relu(self.conv(x))), 1))


model = SmallCNN()
rng = np.random.RandomState(15)
for name, param in model.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.2).astype("float32"))
cosine = paddle.optimizer.lr.CosineAnnealingDecay(learning_rate=0.1, T_max=30)
scheduler = paddle.optimizer.lr.LinearWarmup(learning_rate=cosine, warmup_steps=5, start_lr=0.01, end_lr=0.1)
opt = paddle.optimizer.Momentum(learning_rate=scheduler, momentum=0.9, parameters=model.parameters(),
                                weight_decay=paddle.regularizer.L2Decay(1e-3),
                                grad_clip=nn.ClipGradByGlobalNorm(clip_norm=1.0))
plateau = paddle.optimizer.lr.ReduceOnPlateau(learning_rate=1.0, factor=0.5, patience=0)


def loss_fn(model, x, y):
    return F.cross_entropy(model(x), y)


losses, lrs, val_losses, plateau_lrs = [], [], [], []
for epoch in range(3):
    model.train()
    for x, y in train_loader:
        loss, grads = paddle.value_and_grad(loss_fn)(model, x, y)
        opt.step(grads)
        opt.clear_grad()
        lrs.append(opt.get_lr())
        scheduler.step()
        losses.append(float(loss))
    model.eval()
    with paddle.no_grad():
        val = float(np.mean([float(loss_fn(model, x, y)) for x, y in val_loader]))
    val_losses.append(val)
    plateau.step(val if epoch != 1 else val + 10.0)
    plateau_lrs.append(plateau())
first_x, first_y = next(iter(train_loader))
print(json.dumps({
    "losses": losses,
    "lrs": lrs,
    "val_losses": val_losses,
    "plateau_lrs": plateau_lrs,
    "batch_shape": list(first_x.shape),
    "batch_mean": float(first_x.mean()),
}))
