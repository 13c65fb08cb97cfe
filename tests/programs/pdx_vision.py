"""paddle.vision: transforms on an image array, vision.models.LeNet and
resnet18 with loaded weights, paddle.summary and a softmax top-k readout."""
import json

import numpy as np
import pdx as paddle
import pdx.vision.transforms as T
from pdx.vision.models import LeNet, resnet18
from PIL import Image

paddle.set_device("cpu")
rng = np.random.RandomState(13)
image = Image.fromarray((rng.rand(40, 36, 3) * 255).astype("uint8"))  # as read from disk
transform = T.Compose([T.Resize(32), T.CenterCrop(28), T.ToTensor(), T.Normalize(mean=[0.5] * 3, std=[0.5] * 3)])
x = paddle.to_tensor(transform(image))
gray = T.Compose([T.Grayscale(), T.ToTensor()])(image)

lenet = LeNet(num_classes=10)
info = paddle.summary(lenet, (1, 1, 28, 28))
state = lenet.state_dict()
lenet.set_state_dict({k: (rng.randn(*v.shape) * 0.1).astype("float32") for k, v in sorted(state.items())})
lenet.eval()
lenet_out = lenet(x[:1].unsqueeze(0))

net = resnet18(num_classes=5)
state = net.state_dict()
net.set_state_dict({k: (rng.randn(*v.shape) * 0.05).astype("float32") if not k.endswith("_variance")
                    else np.ones(v.shape, "float32") for k, v in sorted(state.items())})
net.eval()
with paddle.no_grad():
    logits = net(x.unsqueeze(0))
probs = paddle.nn.functional.softmax(logits, axis=-1)
top_p, top_i = paddle.topk(probs, k=3)
print(json.dumps({
    "x_shape": list(x.shape),
    "x_sum": float(x.sum()),
    "x_head": x[:, 0, :6].numpy().tolist(),
    "gray_shape": list(gray.shape),
    "gray_mean": float(gray.mean()),
    "summary": {k: int(v) for k, v in info.items()},
    "lenet_out": lenet_out.numpy().tolist(),
    "resnet_param_count": len(state),
    "resnet_logits": logits.numpy().tolist(),
    "top_p": top_p.numpy().tolist(),
    "top_i": top_i.numpy().tolist(),
}))
