"""A tiny U-Net for segmentation: Conv2D, GroupNorm, InstanceNorm2D,
Conv2DTranspose, Upsample, F.interpolate, F.pad, AdaptiveAvgPool2D,
PixelShuffle and a Dice + BCE loss, trained a few steps with RMSProp."""
import json

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F

paddle.set_device("cpu")


class DoubleConv(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(nn.Conv2D(cin, cout, 3, padding=1, bias_attr=False), nn.GroupNorm(2, cout), nn.ReLU(),
                         nn.Conv2D(cout, cout, 3, padding=1), nn.InstanceNorm2D(cout), nn.LeakyReLU(0.1))


class UNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.down1 = DoubleConv(3, 8)
        self.down2 = DoubleConv(8, 16)
        self.pool = nn.MaxPool2D(2)
        self.up = nn.Conv2DTranspose(16, 8, 2, stride=2)
        self.fuse = DoubleConv(16, 8)
        self.context = nn.Sequential(nn.AdaptiveAvgPool2D(1), nn.Conv2D(16, 8, 1), nn.Sigmoid())
        self.shuffle = nn.Sequential(nn.Conv2D(8, 8, 1), nn.PixelShuffle(2))
        self.upsample = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.head = nn.Conv2D(2, 1, 1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(self.pool(d1))
        u = self.up(d2) * self.context(d2)
        u = F.pad(u, [0, 0, 0, 0])
        f = self.fuse(paddle.concat([u, d1], axis=1))
        s = self.upsample(self.shuffle(f))
        s = F.interpolate(s, size=x.shape[2:], mode="nearest")
        return self.head(s[:, :2])


def dice_bce(logits, mask):
    prob = F.sigmoid(logits)
    inter = (prob * mask).sum(axis=[1, 2, 3])
    dice = 1 - (2 * inter + 1) / (prob.sum(axis=[1, 2, 3]) + mask.sum(axis=[1, 2, 3]) + 1)
    return dice.mean() + F.binary_cross_entropy_with_logits(logits, mask)


model = UNet()
rng = np.random.RandomState(17)
state = model.state_dict()
model.set_state_dict({k: (rng.randn(*v.shape) * 0.3).astype("float32") for k, v in sorted(state.items())})
images = paddle.to_tensor(rng.rand(2, 3, 16, 16).astype("float32"))
yy, xx = np.mgrid[:16, :16]
masks = paddle.to_tensor(np.stack([((yy - 8) ** 2 + (xx - 6) ** 2 < 20), (np.abs(yy - xx) < 3)])[:, None].astype("float32"))
opt = paddle.optimizer.RMSProp(learning_rate=0.005, parameters=model.parameters())


def loss_fn(model, images, masks):
    return dice_bce(model(images), masks)


first = model(images)
losses = []
for step in range(4):
    loss = loss_fn(model, images, masks)
    loss.backward()
    opt.step()
    opt.clear_grad()
    losses.append(float(loss))
print(json.dumps({
    "state_keys": sorted(state),
    "first_shape": list(first.shape),
    "first": first[0, 0, :4].numpy().tolist(),
    "first_mean": float(first.mean()),
    "losses": losses,
}))
