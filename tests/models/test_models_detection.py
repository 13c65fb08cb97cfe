"""pdx.models.detection against independent references: numpy box math, greedy NMS and FCOS assignment
written here, paddle.vision.ops.nms, torchvision's GIoU loss and pycocotools' COCOeval (when installed)."""

import importlib.util

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.models
from pdx.models import detection as D


def test_public_names_and_zoo(tmp_path):
    for name in D.__all__:
        assert getattr(D, name) is not None, name
    names = {m["name"]: m for m in pdx.models.list("detection")}
    assert {"fcos-tiny", "fcos-small"} <= set(names)
    assert names["fcos-tiny"]["task"] == "object-detection" and 1e5 < names["fcos-tiny"]["params"] < 1e6
    model = pdx.models.create("fcos-tiny", num_classes=5, rngs=0)
    assert isinstance(model, D.FCOS) and model.config.num_classes == 5
    pdx.models.save_pretrained(model, tmp_path / "fcos", name="fcos-tiny", num_classes=5)
    loaded = pdx.models.from_pretrained(tmp_path / "fcos")
    assert loaded.config == model.config
    want = model.state_dict()
    got = loaded.state_dict()
    assert list(got) == list(want) and all(np.array_equal(got[k], want[k]) for k in want)


# ----------------------------------------------------------------------------- boxes

def _random_boxes(rng, n, scale=50.0):
    xy = rng.uniform(0, scale, (n, 2))
    wh = rng.uniform(0.5, scale / 2, (n, 2))
    return np.concatenate([xy, xy + wh], 1).astype(np.float32)


def _np_giou_loss(a, b, eps=1e-7):
    a, b = a.astype(np.float64), b.astype(np.float64)
    out = []
    for p, t in zip(a, b):
        iw = max(0.0, min(p[2], t[2]) - max(p[0], t[0]))
        ih = max(0.0, min(p[3], t[3]) - max(p[1], t[1]))
        inter = iw * ih
        union = (p[2] - p[0]) * (p[3] - p[1]) + (t[2] - t[0]) * (t[3] - t[1]) - inter
        hull = (max(p[2], t[2]) - min(p[0], t[0])) * (max(p[3], t[3]) - min(p[1], t[1]))
        out.append(1 - (inter / (union + eps) - (hull - union) / (hull + eps)))
    return np.array(out)


def _np_iou(a, b):
    out = np.zeros((len(a), len(b)))
    for i, p in enumerate(a.astype(np.float64)):
        for j, t in enumerate(b.astype(np.float64)):
            iw = max(0.0, min(p[2], t[2]) - max(p[0], t[0]))
            ih = max(0.0, min(p[3], t[3]) - max(p[1], t[1]))
            union = (p[2] - p[0]) * (p[3] - p[1]) + (t[2] - t[0]) * (t[3] - t[1]) - iw * ih
            out[i, j] = iw * ih / union if union > 0 else 0.0
    return out


def test_box_iou_and_giou_loss_match_references():
    rng = np.random.default_rng(0)
    a, b = _random_boxes(rng, 64), _random_boxes(rng, 64)
    # identical, nested, touching and far-apart pairs
    b[0] = a[0]
    b[1] = a[1] + np.array([1, 1, -1, -1]) * 0.2 * (a[1, 2:] - a[1, :2]).repeat(2)
    b[2] = a[2] + np.array([a[2, 2] - a[2, 0]] * 2 + [a[2, 2] - a[2, 0]] * 2) * np.array([1, 0, 1, 0])
    b[3] = a[3] + 500
    np.testing.assert_allclose(np.asarray(D.box_iou(a, b)), _np_iou(a, b), rtol=1e-5, atol=1e-6)
    ref = _np_giou_loss(a, b)
    np.testing.assert_allclose(np.asarray(D.giou_loss(a, b)), ref, rtol=1e-5, atol=1e-5)
    assert abs(float(D.giou_loss(a, b, reduction="mean")) - ref.mean()) < 1e-5
    assert abs(float(D.giou_loss(a, b, reduction="sum")) - ref.sum()) < 1e-3
    assert float(D.giou_loss(a[:1], b[:1])[0]) < 1e-6 and float(D.giou_loss(a[3:4], b[3:4])[0]) > 1.9
    # disjoint boxes still get a gradient: the far corner moves toward the target (at +500, +500)
    g = jax.grad(lambda p: D.giou_loss(p, jnp.asarray(b[3:4])).sum())(jnp.asarray(a[3:4]))
    assert np.all(np.isfinite(g)) and float(g[0, 2]) < 0 and float(g[0, 3]) < 0   # grow toward the target
    if importlib.util.find_spec("torchvision") is not None:
        import torch
        from torchvision.ops import generalized_box_iou_loss

        tv = generalized_box_iou_loss(torch.tensor(a), torch.tensor(b), reduction="none").numpy()
        np.testing.assert_allclose(np.asarray(D.giou_loss(a, b)), tv, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="pred.shape"):
        D.giou_loss(a, b[:3])
    with pytest.raises(ValueError, match="reduction='avg'"):
        D.giou_loss(a, b, reduction="avg")
    with pytest.raises(ValueError, match="last axis of 4"):
        D.box_iou(a[:, :3], b)
    pts = rng.uniform(0, 50, (5, 2)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(D.distance_to_box(pts[:, None], D.box_to_distance(pts, a[:3]))),
                               np.broadcast_to(a[:3], (5, 3, 4)), rtol=1e-5, atol=1e-4)


# ----------------------------------------------------------------------------- NMS

def _np_nms(boxes, scores, thr, max_out=None, score_thr=None):
    """Textbook greedy NMS: stable sort by score, keep, drop overlaps > thr."""
    order = np.argsort(-scores, kind="stable")
    if score_thr is not None:
        order = order[scores[order] > score_thr]
    keep = []
    iou = _np_iou(boxes, boxes)
    alive = np.ones(len(boxes), bool)
    for i in order:
        if not alive[i]:
            continue
        keep.append(int(i))
        alive &= ~(iou[i] > thr)
        alive[i] = False
    return keep[:max_out] if max_out else keep


def _np_batched_nms(boxes, scores, labels, thr, max_out=None):
    keep = []
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        keep += [int(idx[k]) for k in _np_nms(boxes[idx], scores[idx], thr)]
    keep = sorted(keep, key=lambda k: (-scores[k], k))
    return keep[:max_out] if max_out else keep


def test_nms_matches_numpy_reference_and_paddle():
    rng = np.random.default_rng(1)
    n = 48
    paddle = pytest.importorskip("paddle") if importlib.util.find_spec("paddle") else None
    run = jax.jit(D.nms, static_argnames=("iou_threshold", "max_output_size", "score_threshold"))
    run_batched = jax.jit(D.batched_nms, static_argnames=("iou_threshold", "max_output_size", "score_threshold"))
    checked = 0
    for trial in range(12):
        # clustered boxes so suppression happens at every threshold
        centers = rng.uniform(10, 40, (6, 2))[rng.integers(0, 6, n)] + rng.normal(0, 3, (n, 2))
        wh = rng.uniform(4, 16, (n, 2))
        boxes = np.concatenate([centers - wh / 2, centers + wh / 2], 1).astype(np.float32)
        scores = rng.uniform(0, 1, n).astype(np.float32)
        if trial % 3 == 1:
            scores = np.round(scores * 4) / 4          # many exact ties: input order decides
        if trial % 3 == 2:
            boxes[n // 2:] = boxes[: n - n // 2]       # duplicate boxes (IoU exactly 1)
        labels = rng.integers(0, 3, n).astype(np.int32)
        for thr in (0.0, 0.3, 0.5, 0.7, 1.0):
            ref = _np_nms(boxes, scores, thr)
            got = run(boxes, scores, iou_threshold=thr)
            assert int(got.count) == len(ref)
            assert np.asarray(got.indices).tolist() == ref + [-1] * (n - len(ref)), (trial, thr)
            capped = run(boxes, scores, iou_threshold=thr, max_output_size=5, score_threshold=0.3)
            ref5 = _np_nms(boxes, scores, thr, 5, 0.3)
            assert np.asarray(capped.indices).tolist() == ref5 + [-1] * (5 - len(ref5))
            assert int(capped.count) == len(ref5)
            bref = _np_batched_nms(boxes, scores, labels, thr)
            bgot = run_batched(boxes, scores, labels, iou_threshold=thr)
            assert np.asarray(bgot.indices)[: int(bgot.count)].tolist() == bref, (trial, thr)
            if paddle is not None and trial % 3 == 0:   # paddle's order among equal scores is its own
                pb, ps = paddle.to_tensor(boxes), paddle.to_tensor(scores)
                assert paddle.vision.ops.nms(pb, thr, ps).numpy().tolist() == ref
                pbat = paddle.vision.ops.nms(pb, thr, ps, category_idxs=paddle.to_tensor(labels),
                                             categories=[0, 1, 2], top_k=n).numpy().tolist()
                assert pbat == bref
                checked += 1
    assert paddle is None or checked == 5 * 4
    with pytest.raises(ValueError, match="scores must be"):
        D.nms(boxes, scores[:3])
    with pytest.raises(ValueError, match="iou_threshold=1.5"):
        D.nms(boxes, scores, iou_threshold=1.5)
    with pytest.raises(ValueError, match="max_output_size=0"):
        D.nms(boxes, scores, max_output_size=0)


def test_nms_exports_to_stablehlo(tmp_path):
    rng = np.random.default_rng(2)
    boxes = _random_boxes(rng, 32, scale=30)
    scores = rng.uniform(0, 1, 32).astype(np.float32)

    def select(boxes, scores):
        return D.nms(boxes, scores, iou_threshold=0.4, max_output_size=10)._asdict()

    path = pdx.export.export(select, tmp_path / "nms", [pdx.jit.InputSpec([32, 4], "float32", "boxes"),
                                                         pdx.jit.InputSpec([32], "float32", "scores")],
                             name="nms", differentiable=False)
    predictor = pdx.export.load(path)
    out = dict(zip(predictor.output_names, predictor(boxes, scores)))
    ref = _np_nms(boxes, scores, 0.4, 10)
    assert out["indices"].tolist() == ref + [-1] * (10 - len(ref)) and int(out["count"]) == len(ref)


# ----------------------------------------------------------------------------- mAP

def _random_detection_set(rng, n_images=24, num_classes=3):
    gt_b, gt_l, pb, ps, pl = [], [], [], [], []
    for _ in range(n_images):
        g = int(rng.integers(0, 6))
        boxes = _random_boxes(rng, g, scale=80)
        labels = rng.integers(0, num_classes - 1, g)      # the last class has no ground truth
        dets, scores, dlabels = [], [], []
        for box, label in zip(boxes, labels):
            for _ in range(int(rng.integers(0, 3))):      # misses, hits and duplicates
                jitter = rng.normal(0, 0.12, 4) * np.repeat(box[2:] - box[:2], 2)
                dets.append(box + jitter)
                dlabels.append(label if rng.uniform() < 0.85 else rng.integers(0, num_classes))
                scores.append(rng.uniform())
        for _ in range(int(rng.integers(0, 4))):          # false positives
            dets.append(_random_boxes(rng, 1, scale=80)[0])
            dlabels.append(rng.integers(0, num_classes))
            scores.append(rng.uniform(0, 0.7))
        dets = np.array(dets, np.float64).reshape(-1, 4)
        dets[:, 2:] = np.maximum(dets[:, 2:], dets[:, :2] + 0.5)
        gt_b.append(boxes.astype(np.float64))
        gt_l.append(labels)
        pb.append(dets)
        ps.append(np.array(scores))
        pl.append(np.array(dlabels, np.int64))
    return pb, ps, pl, gt_b, gt_l


def _pycocotools_stats(pb, ps, pl, gt_b, gt_l, num_classes):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    def xywh(b):
        return [float(b[0]), float(b[1]), float(b[2] - b[0]), float(b[3] - b[1])]

    images = [{"id": i + 1} for i in range(len(gt_b))]
    anns, dets = [], []
    for i, (boxes, labels) in enumerate(zip(gt_b, gt_l)):
        for b, c in zip(boxes, labels):
            anns.append({"id": len(anns) + 1, "image_id": i + 1, "category_id": int(c) + 1, "bbox": xywh(b),
                         "area": float((b[2] - b[0]) * (b[3] - b[1])), "iscrowd": 0})
        for b, s, c in zip(pb[i], ps[i], pl[i]):
            dets.append({"image_id": i + 1, "category_id": int(c) + 1, "bbox": xywh(b), "score": float(s)})
    coco = COCO()
    coco.dataset = {"images": images, "annotations": anns,
                    "categories": [{"id": c + 1, "name": str(c)} for c in range(num_classes)]}
    coco.createIndex()
    ev = COCOeval(coco, coco.loadRes(dets), "bbox")
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
    return ev.stats


def test_coco_map_hand_computed_case():
    gt = [np.array([[0, 0, 10, 10], [20, 20, 30, 30]], float), np.array([[0, 0, 10, 10]], float)]
    gl = [np.array([0, 0]), np.array([0])]
    # image 0: exact hit (0.9), a box with IoU 0.64 to gt 1 (0.8); image 1: false positive (0.95), miss
    pb = [np.array([[0, 0, 10, 10], [20, 20, 28, 28]], float), np.array([[40, 40, 50, 50]], float)]
    ps = [np.array([0.9, 0.8]), np.array([0.95])]
    pl = [np.array([0, 0]), np.array([0])]
    m = D.coco_map(pb, ps, pl, gt, gl)
    # ranked: FP(0.95), TP(0.9), TP@<=0.6 (0.8); 3 ground truths.
    # IoU <= 0.6: recall 1/3 at precision 1/2, 2/3 at 2/3 -> monotone precision 2/3 up to recall 2/3:
    #   recall points 0..0.66 (67 of 101) read 2/3 -> AP = 67 * (2/3) / 101
    # IoU >= 0.65: recall 1/3 at precision 1/2 -> 34 points read 1/2 -> AP = 34 * 0.5 / 101
    low, high = 67 * (2 / 3) / 101, 34 * 0.5 / 101
    expected = (3 * low + 7 * high) / 10                    # thresholds .5 .55 .6 | .65 ... .95
    assert abs(m.map50 - low) < 1e-12 and abs(m.map75 - high) < 1e-12 and abs(m.map - expected) < 1e-12
    perfect = D.coco_map(gt, [np.ones(len(g)) for g in gt], gl, gt, gl, num_classes=2)
    assert perfect.map == 1.0 and np.isnan(perfect.per_class[1])
    with pytest.raises(ValueError, match="num_classes=1"):
        D.coco_map(pb, ps, [np.array([0, 3]), np.array([0])], gt, gl, num_classes=1)
    with pytest.raises(ValueError, match="gt_boxes has 1 images"):
        D.coco_map(pb, ps, pl, gt[:1], gl)


@pytest.mark.skipif(importlib.util.find_spec("pycocotools") is None, reason="pycocotools is not installed")
def test_coco_map_matches_pycocotools():
    rng = np.random.default_rng(3)
    for trial in range(3):
        data = _random_detection_set(rng)
        ours = D.coco_map(*data, num_classes=3, max_dets=100)
        stats = _pycocotools_stats(*data, num_classes=3)
        assert abs(ours.map - stats[0]) < 1e-9, (trial, ours, stats[:3])
        assert abs(ours.map50 - stats[1]) < 1e-9 and abs(ours.map75 - stats[2]) < 1e-9
        assert 0.05 < ours.map50 < 0.95


# ----------------------------------------------------------------------------- data and model

def _np_fcos_targets(points, strides, lower, upper, boxes, labels, radius):
    """Loop-by-loop FCOS assignment: center sampling, scale range, smallest box wins."""
    n = len(points)
    out_labels = -np.ones(n, int)
    out_ctr = np.zeros(n)
    out_boxes = np.zeros((n, 4))
    for p, (x, y) in enumerate(points):
        best, best_area = None, np.inf
        for box, label in zip(boxes, labels):
            if label < 0:
                continue
            l, t, r, b = x - box[0], y - box[1], box[2] - x, box[3] - y
            cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
            rad = strides[p] * radius
            inside = (max(cx - rad, box[0]) < x < min(cx + rad, box[2])) and (max(cy - rad, box[1]) < y < min(cy + rad, box[3]))
            if inside and lower[p] <= max(l, t, r, b) <= upper[p]:
                area = (box[2] - box[0]) * (box[3] - box[1])
                if area < best_area:
                    best, best_area = (box, label, (l, t, r, b)), area
        if best is not None:
            box, label, (l, t, r, b) = best
            out_labels[p], out_boxes[p] = label, box
            out_ctr[p] = np.sqrt(min(l, r) / max(l, r) * min(t, b) / max(t, b))
    return out_labels, out_boxes, out_ctr


def test_shapes_data_and_fcos_targets():
    d = D.make_shapes(6, size=64, max_objects=4, noise=0.0, seed=5)
    again = D.make_shapes(6, size=64, max_objects=4, noise=0.0, seed=5)
    assert np.array_equal(d.images, again.images) and np.array_equal(d.boxes, again.boxes)
    assert d.images.dtype == np.float32 and 0 <= d.images.min() and d.images.max() <= 1
    for img, boxes, labels in zip(d.images, d.boxes, d.labels):
        n = int((labels >= 0).sum())
        assert 1 <= n <= 4 and np.all(labels[n:] == -1) and np.all(labels[:n] < 3)
        # the last shape drawn is on top: its pixels span exactly its box
        last = boxes[n - 1]
        color = img[:, int(last[1]) + int((last[3] - last[1]) * 0.75), int((last[0] + last[2]) / 2)]
        ys, xs = np.nonzero(np.all(np.abs(img - color[:, None, None]) < 1e-6, axis=0))
        inside = (xs >= last[0]) & (xs < last[2]) & (ys >= last[1]) & (ys < last[3])
        ys, xs = ys[inside], xs[inside]
        extent = np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1])
        # a triangle's thin apex rows may hold no pixel center: allow a few pixels there
        tolerance = 4 if labels[n - 1] == D.SHAPE_CLASSES.index("triangle") else 0
        assert np.all(np.abs(extent - last) <= tolerance), (last, extent, labels)
    model = D.FCOS("tiny", rngs=0)
    pts, strides, lower, upper = model.points(64, 64)
    assert len(pts) == 16 * 16 + 8 * 8 + 4 * 4
    total = 0
    for boxes, labels in zip(d.boxes, d.labels):
        got = D.fcos_targets(*(jnp.asarray(a) for a in (pts, strides, lower, upper)), boxes, labels, center_radius=1.5)
        ref = _np_fcos_targets(pts, strides, lower, upper, boxes, labels, 1.5)
        assert np.array_equal(np.asarray(got.labels), ref[0])
        pos = ref[0] >= 0
        np.testing.assert_allclose(np.asarray(got.boxes)[pos], ref[1][pos])
        np.testing.assert_allclose(np.asarray(got.centerness), ref[2], atol=1e-6)
        total += pos.sum()
    assert total >= 6 * 3                                   # every image has positives


def test_fcos_model_loss_detect_and_errors():
    d = D.make_shapes(2, size=64, seed=7)
    model = D.FCOS("tiny", rngs=0)
    out = pdx.jit(lambda m, x: m(x))(model, d.images)
    assert out.cls_logits.shape == (2, 336, 3) and out.distances.shape == (2, 336, 4)
    assert float(out.distances.min()) > 0
    # the prior bias: initial foreground probability ~ prior_prob
    assert abs(float(jax.nn.sigmoid(out.cls_logits).mean()) - 0.01) < 0.005

    @pdx.jit
    def loss_and_grads(m, x, b, y):
        terms = m.loss_terms(x, b, y)
        return terms, pdx.value_and_grad(lambda m: m.loss(x, b, y))(m)

    terms, (loss, grads) = loss_and_grads(model, d.images, d.boxes, d.labels)
    assert abs(float(terms.total) - float(terms.cls + terms.box + terms.centerness)) < 1e-5
    assert abs(float(loss) - float(terms.total)) < 1e-5 and np.isfinite(float(loss))
    flat = jax.tree_util.tree_leaves(grads)
    assert flat and all(np.all(np.isfinite(np.asarray(g))) for g in flat)
    det = pdx.jit(lambda m, x: m.detect(x))(model, d.images)
    assert det.boxes.shape == (2, 20, 4) and det.labels.dtype == jnp.int32
    for s, l, n in zip(np.asarray(det.scores), np.asarray(det.labels), np.asarray(det.count)):
        assert np.all(l[n:] == -1) and np.all(np.diff(s[:n]) <= 0) and np.all(s[:n] > 0.05)
    with pytest.raises(ValueError, match="multiples of the largest stride 16"):
        model(jnp.zeros((1, 3, 60, 64)))
    with pytest.raises(ValueError, match=r"images must be \(B, 3, H, W\)"):
        model(jnp.zeros((1, 64, 64, 3)))
    with pytest.raises(ValueError, match="config='huge' is not a preset"):
        D.FCOS("huge")
    with pytest.raises(ValueError, match=r"unknown config field\(s\) \['num_class'\]"):
        D.FCOS("tiny", num_class=3)
    with pytest.raises(ValueError, match="regress_bounds"):
        D.FCOSConfig(regress_bounds=(0.0, 1e8))
