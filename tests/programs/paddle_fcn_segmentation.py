"""Semantic segmentation with a small FCN: a strided Conv2D + BatchNorm2D
backbone, a 1x1 classifier, F.interpolate (bilinear) back to the input size,
pixel-wise F.cross_entropy over the class axis (axis=1) with class weights,
trained with Momentum, scored with mean IoU."""
import json

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F

paddle.set_device("cpu")
N_CLASSES, SIZE = 3, 24


def make_scene(rng):
    """Background 0, a square 1 and a disc 2 at random places."""
    image = 0.1 * rng.randn(3, SIZE, SIZE).astype("float32")
    label = np.zeros((SIZE, SIZE), dtype="int64")
    y, x = rng.randint(2, SIZE - 10, size=2)
    label[y:y + 8, x:x + 8] = 1
    cy, cx = rng.randint(5, SIZE - 5, size=2)
    yy, xx = np.mgrid[:SIZE, :SIZE]
    label[(yy - cy) ** 2 + (xx - cx) ** 2 < 16] = 2
    image[0] += label == 1
    image[1] += label == 2
    return image, label


class FCN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2D(3, 8, 3, stride=2, padding=1), nn.BatchNorm2D(8), nn.ReLU(),
            nn.Conv2D(8, 16, 3, stride=2, padding=1), nn.BatchNorm2D(16), nn.ReLU())
        self.classifier = nn.Conv2D(16, N_CLASSES, 1)

    def forward(self, x):
        logits = self.classifier(self.backbone(x))
        return F.interpolate(logits, size=x.shape[2:], mode="bilinear", align_corners=False)


def seg_loss(model, images, labels, weight):
    return F.cross_entropy(model(images), labels, weight=weight, axis=1)


def mean_iou(pred, label):
    ious = []
    for c in range(N_CLASSES):
        inter = np.logical_and(pred == c, label == c).sum()
        union = np.logical_or(pred == c, label == c).sum()
        ious.append(inter / union if union else 1.0)
    return float(np.mean(ious))


model = FCN()
rng = np.random.RandomState(10)
for name, param in model.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.3).astype("float32"))
opt = paddle.optimizer.Momentum(learning_rate=0.05, momentum=0.9, use_nesterov=True,
                                parameters=model.parameters())
weight = paddle.to_tensor(np.array([0.5, 1.0, 1.5], dtype="float32"))

losses = []
model.train()
for step in range(12):
    scenes = [make_scene(rng) for _ in range(8)]
    images = paddle.to_tensor(np.stack([s[0] for s in scenes]))
    labels = paddle.to_tensor(np.stack([s[1] for s in scenes]))
    loss = seg_loss(model, images, labels, weight)
    loss.backward()
    opt.step()
    opt.clear_grad()
    losses.append(float(loss))

model.eval()
scenes = [make_scene(np.random.RandomState(50 + k)) for k in range(4)]
with paddle.no_grad():
    logits = model(paddle.to_tensor(np.stack([s[0] for s in scenes])))
    pred = logits.argmax(axis=1).numpy()
    probs = F.softmax(logits, axis=1)
print(json.dumps({
    "losses": losses,
    "logits_shape": list(logits.shape),
    "miou": mean_iou(pred, np.stack([s[1] for s in scenes])),
    "probs_corner": probs[0, :, 0, :4].numpy().tolist(),
    "bn_var": model.backbone[1]._variance.numpy().tolist(),
}))
