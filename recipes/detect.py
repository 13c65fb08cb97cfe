"""Object detection: train an FCOS-style detector on generated shapes, report COCO mAP, export it with NMS inside.

The data is generated (`pdx.models.detection.make_shapes`): noisy 64x64
images holding 1-4 rectangles, ellipses and triangles of random size and
colour, with their boxes. The detector (`FCOS`, zoo preset "fcos-tiny") is
trained with one jitted step (focal + GIoU + centerness losses, FCOS center
sampling), evaluated with the numpy COCO evaluator on a held-out set, then
exported (`pdx.export`) as one program from images to fixed-size detections,
per-class NMS included; the exported program's output is checked against
the eager model's.

    python recipes/detect.py                      # ~4 minutes on a 2-core CPU
    python recipes/detect.py --steps 200          # a quick run
"""

from __future__ import annotations

import dataclasses
import tempfile
import time

import numpy as np

import pdx
from pdx.jit import InputSpec
from pdx.models.detection import SHAPE_CLASSES, coco_map, make_shapes


@dataclasses.dataclass(frozen=True)
class DetectConfig:
    preset: str = "tiny"           # FCOS preset ("tiny", "small")
    size: int = 64                 # image height and width
    max_objects: int = 4           # shapes per image: 1..max_objects
    train_images: int = 2048       # generated training images
    test_images: int = 256         # held-out images (another seed)
    steps: int = 600               # optimizer steps
    batch_size: int = 32
    learning_rate: float = 3e-3    # AdamW peak, cosine decay after a short warmup
    weight_decay: float = 1e-4
    seed: int = 0
    export: bool = True            # export the detector (NMS inside) and compare with the eager output


def train(model, data, cfg: DetectConfig) -> list[float]:
    """AdamW with warmup + cosine decay over `cfg.steps` jitted steps; returns the loss every 50 steps."""
    images, boxes, labels = data
    schedule = pdx.optimizer.lr.LinearWarmup(
        pdx.optimizer.lr.CosineAnnealingDecay(cfg.learning_rate, T_max=cfg.steps), warmup_steps=min(50, cfg.steps // 5),
        start_lr=cfg.learning_rate / 20, end_lr=cfg.learning_rate)
    opt = pdx.optimizer.AdamW(learning_rate=schedule, parameters=model.parameters(), weight_decay=cfg.weight_decay,
                              grad_clip=pdx.nn.ClipGradByGlobalNorm(10.0))

    @pdx.jit
    def step(model, opt, x, b, y):
        loss, grads = pdx.value_and_grad(lambda m: m.loss(x, b, y))(model)
        opt.step(grads)
        return loss

    rng = np.random.default_rng(cfg.seed)
    order = rng.permutation(len(images))
    cursor, losses = 0, []
    model.train()
    for i in range(cfg.steps):
        if cursor + cfg.batch_size > len(order):
            order, cursor = rng.permutation(len(images)), 0
        idx = order[cursor:cursor + cfg.batch_size]
        cursor += cfg.batch_size
        loss = step(model, opt, images[idx], boxes[idx], labels[idx])
        schedule.step()
        if i % 50 == 0 or i == cfg.steps - 1:
            losses.append(float(loss))
    return losses


_detect = pdx.jit(lambda model, images: model.detect(images))


def predict(model, images, batch: int = 64):
    """Detections for all images, as per-image numpy (boxes, scores, labels) cut to their counts."""
    model.eval()
    out = []
    for i in range(0, len(images), batch):
        det = _detect(model, images[i:i + batch])
        for b, s, l, n in zip(*(np.asarray(a) for a in det)):
            out.append((b[:n], s[:n], l[:n]))
    return out


def evaluate(model, data):
    images, boxes, labels = data
    dets = predict(model, images)
    return coco_map([d[0] for d in dets], [d[1] for d in dets], [d[2] for d in dets],
                    [b[l >= 0] for b, l in zip(boxes, labels)], [l[l >= 0] for l in labels],
                    num_classes=len(SHAPE_CLASSES))


def export_check(model, images, workdir) -> float:
    """Export images -> detections (NMS inside) and return the largest difference to the eager output."""
    model.eval()

    def detect(images):
        return model.detect(images)._asdict()

    spec = [InputSpec([None, 3, images.shape[2], images.shape[3]], "float32", "images")]
    path = pdx.export.export(detect, f"{workdir}/fcos", spec, name="fcos", differentiable=False)
    predictor = pdx.export.load(path)
    exported = dict(zip(predictor.output_names, predictor(images)))
    eager = model.detect(images)
    names = list(eager._fields)
    if sorted(exported) != sorted(names):
        raise AssertionError(f"exported outputs {sorted(exported)} are not detect()'s {names}")
    worst = 0.0
    for name in names:
        a, b = np.asarray(exported[name]), np.asarray(getattr(eager, name))
        if a.shape != b.shape or a.dtype != b.dtype:
            raise AssertionError(f"exported {name}: {a.shape} {a.dtype} vs eager {b.shape} {b.dtype}")
        worst = max(worst, float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)), initial=0.0)))
    return worst


def main(cfg: DetectConfig) -> dict:
    train_data = make_shapes(cfg.train_images, size=cfg.size, max_objects=cfg.max_objects, seed=cfg.seed)
    test_data = make_shapes(cfg.test_images, size=cfg.size, max_objects=cfg.max_objects, seed=cfg.seed + 10_000)
    pdx.seed(cfg.seed)
    model = pdx.models.create(f"fcos-{cfg.preset}", num_classes=len(SHAPE_CLASSES), rngs=cfg.seed)

    untrained = evaluate(model, test_data)
    start = time.perf_counter()
    losses = train(model, train_data, cfg)
    train_s = time.perf_counter() - start
    trained = evaluate(model, test_data)

    results = {"untrained": dict(map50=untrained.map50, map=untrained.map, map75=untrained.map75),
               "trained": dict(map50=trained.map50, map=trained.map, map75=trained.map75,
                               per_class=dict(zip(SHAPE_CLASSES, trained.per_class.tolist()))),
               "losses": losses, "train_seconds": train_s}
    if cfg.export:
        with tempfile.TemporaryDirectory() as workdir:
            results["export_max_abs_diff"] = export_check(model, test_data.images[:4], workdir)

    print(f"\nFCOS-{cfg.preset} on generated shapes {cfg.size}x{cfg.size}: {cfg.steps} steps x {cfg.batch_size} "
          f"in {train_s:.0f} s, loss {losses[0]:.3f} -> {losses[-1]:.3f}; {cfg.test_images} test images")
    print("| model | mAP@0.5 | mAP@[.5:.95] | mAP@0.75 |\n|---|---:|---:|---:|")
    for name in ("untrained", "trained"):
        r = results[name]
        print(f"| {name} | {r['map50']:.4f} | {r['map']:.4f} | {r['map75']:.4f} |")
    print("\n| class | AP@[.5:.95] |\n|---|---:|")
    for name, ap in results["trained"]["per_class"].items():
        print(f"| {name} | {ap:.4f} |")
    if cfg.export:
        print(f"\nexported program (NMS inside) vs eager detect(): max |difference| = {results['export_max_abs_diff']:.2e}")
    return results


if __name__ == "__main__":
    from _config_cli import parse_config  # recipes/ is sys.path[0] when a recipe runs

    main(parse_config(DetectConfig, __doc__))
