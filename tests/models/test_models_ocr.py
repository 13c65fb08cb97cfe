"""pdx.models.ocr: CTC decoding against brute force over alignments, DB loss pieces and targets against
numpy, box post-processing on synthetic maps, and CRNN against the same network built in paddle."""

import functools
import itertools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.nn.functional as F
from pdx.models import ocr
from pdx.models.detection import box_iou


def test_public_names_and_zoo():
    for name in ocr.__all__:
        assert getattr(ocr, name) is not None, name
    rows = {r["name"]: r for r in pdx.models.list("ocr")}
    assert {"crnn-tiny", "db-tiny"} <= set(rows)
    assert rows["crnn-tiny"]["task"] == "text-recognition" and rows["db-tiny"]["task"] == "text-detection"
    run = pdx.jit(lambda model, x: model(x))
    crnn = pdx.models.create("crnn-tiny")
    assert run(crnn, jnp.zeros((2, 1, 32, 128))).shape == (2, 32, len(ocr.DEFAULT_ALPHABET) + 1)
    db = pdx.models.create("db-tiny")
    maps = run(db, jnp.zeros((1, 1, 64, 96)))
    assert maps.shape == (1, 3, 64, 96) and float(maps.min()) >= 0 and float(maps.max()) <= 1
    with pytest.raises(ValueError, match="H % 16"):
        crnn(jnp.zeros((1, 1, 30, 128)))
    with pytest.raises(ValueError, match="multiples of 8"):
        db(jnp.zeros((1, 1, 60, 96)))
    with pytest.raises(ValueError, match="not in alphabet"):
        ocr.encode_texts(["ab!"], max_len=8)
    with pytest.raises(ValueError, match="beam_width"):
        ocr.ctc_beam_search_decode(np.zeros((1, 2, 3)), beam_width=0)


def _collapse(path, blank=0):
    return tuple(c for c, _ in itertools.groupby(path) if c != blank)


def _brute_force(log_probs, length):
    """log p(labeling) for every labeling: sum over all C^T alignments that collapse to it."""
    probs = np.exp(log_probs[:length])
    totals = {}
    for path in itertools.product(range(probs.shape[1]), repeat=length):
        p = np.prod(probs[np.arange(length), path])
        totals[_collapse(path)] = totals.get(_collapse(path), 0.0) + p
    return {k: np.log(v) for k, v in totals.items()}


def test_ctc_decoders_against_brute_force():
    rng = np.random.default_rng(0)
    batch, steps, classes = 4, 5, 3
    logits = rng.normal(size=(batch, steps, classes)) * 2
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    lengths = np.array([5, 4, 5, 3])
    exact = ocr.ctc_beam_search_decode(log_probs, beam_width=200, top_paths=200, lengths=lengths)
    narrow = ocr.ctc_beam_search_decode(log_probs, beam_width=4, lengths=lengths)
    greedy = ocr.ctc_greedy_decode(logits, lengths=lengths)
    for b in range(batch):
        reference = _brute_force(log_probs[b], lengths[b])
        assert len(exact[b]) == len(reference)
        for ids, score in exact[b]:
            np.testing.assert_allclose(score, reference[tuple(ids)], rtol=1e-9, atol=1e-12)
        best = max(reference, key=reference.get)
        assert tuple(exact[b][0][0]) == best
        assert tuple(narrow[b][0][0]) == best            # a beam of 4 finds the best labeling here
        assert greedy[b] == list(_collapse(np.argmax(logits[b, :lengths[b]], -1)))
        # F.ctc_loss is -log p(labeling): the brute-force sum agrees with it
        label = max(reference, key=len)
        loss = F.ctc_loss(jnp.asarray(log_probs[b:b + 1].transpose(1, 0, 2), jnp.float32),
                          jnp.asarray([list(label)]), jnp.asarray([lengths[b]]), jnp.asarray([len(label)]),
                          reduction="sum")
        np.testing.assert_allclose(-float(loss), reference[label], rtol=1e-4)


def test_recognition_metrics_against_recursive_edit_distance():
    @functools.lru_cache(maxsize=None)
    def lev(a, b):
        if not a or not b:
            return len(a) + len(b)
        return min(lev(a[1:], b) + 1, lev(a, b[1:]) + 1, lev(a[1:], b[1:]) + (a[0] != b[0]))

    rng = np.random.default_rng(1)
    preds = ocr.random_strings(30, seed=rng, alphabet="abc", min_len=1, max_len=6)
    targets = ocr.random_strings(30, seed=rng, alphabet="abc", min_len=1, max_len=6)
    targets[:5] = preds[:5]
    for p, t in zip(preds, targets):
        assert ocr.edit_distance(p, t) == lev(p, t)
    m = ocr.recognition_metrics(preds, targets)
    assert m.word_accuracy == np.mean([p == t for p, t in zip(preds, targets)])
    assert m.char_accuracy == pytest.approx(1 - sum(lev(p, t) for p, t in zip(preds, targets)) / sum(map(len, targets)))
    labels, lengths = ocr.encode_texts(["a0z", "zz"], max_len=4)
    assert labels.tolist() == [[11, 1, 36, 0], [36, 36, 0, 0]] and lengths.tolist() == [3, 2]
    assert [ocr.decode_ids(row) for row in labels] == ["a0z", "zz"]


def _np_balanced_bce(pred, gt, mask, ratio, eps=1e-6):
    pred = np.clip(pred, eps, 1 - eps)
    loss = -(gt * np.log(pred) + (1 - gt) * np.log(1 - pred))
    pos = (gt * mask).astype(bool)
    neg = ((1 - gt) * mask).astype(bool)
    k = int(min(neg.sum(), np.floor(pos.sum() * ratio)))
    hard = np.sort(loss[neg])[::-1][:k]
    return (loss[pos].sum() + hard.sum()) / (pos.sum() + k + eps)


def test_db_loss_pieces_against_numpy():
    rng = np.random.default_rng(2)
    shape = (2, 16, 24)
    prob_pred, thresh_pred = rng.uniform(0.01, 0.99, shape), rng.uniform(0.2, 0.8, shape)
    gt = (rng.uniform(size=shape) < 0.15).astype(np.float64)
    mask = (rng.uniform(size=shape) < 0.9).astype(np.float64)
    tgt_thresh, tmask = rng.uniform(0.3, 0.7, shape), (rng.uniform(size=shape) < 0.4).astype(np.float64)
    binary = 1 / (1 + np.exp(-50 * (prob_pred - thresh_pred)))
    np.testing.assert_allclose(ocr.differentiable_binarization(prob_pred, thresh_pred), binary, rtol=1e-5, atol=1e-12)
    bce = _np_balanced_bce(prob_pred, gt, mask, 3.0)
    dice = 1 - 2 * (binary * gt * mask).sum() / ((binary * mask).sum() + (gt * mask).sum() + 1e-6)
    l1 = (np.abs(thresh_pred - tgt_thresh) * tmask).sum() / (tmask.sum() + 1e-6)
    f32 = lambda a: jnp.asarray(a, jnp.float32)  # noqa: E731
    np.testing.assert_allclose(ocr.balanced_bce_loss(f32(prob_pred), f32(gt), f32(mask)), bce, rtol=1e-5)
    np.testing.assert_allclose(ocr.dice_loss(f32(binary), f32(gt), f32(mask)), dice, rtol=1e-5)
    np.testing.assert_allclose(ocr.masked_l1_loss(f32(thresh_pred), f32(tgt_thresh), f32(tmask)), l1, rtol=1e-5)
    # mostly text: fewer negatives than 3x the positives, so every negative is kept
    gt_many = 1.0 - (rng.uniform(size=shape) < 0.05)
    np.testing.assert_allclose(ocr.balanced_bce_loss(f32(prob_pred), f32(gt_many), f32(mask)),
                               _np_balanced_bce(prob_pred, gt_many, mask, 3.0), rtol=1e-5)
    maps = f32(np.stack([prob_pred, thresh_pred, binary], axis=1))
    total, parts = ocr.db_loss(maps, f32(gt), f32(mask), f32(tgt_thresh), f32(tmask), alpha=1.0, beta=10.0)
    np.testing.assert_allclose(total, bce + dice + 10 * l1, rtol=1e-5)
    np.testing.assert_allclose(parts["thresh"], l1, rtol=1e-5)
    grads = jax.grad(lambda m: ocr.db_loss(m, f32(gt), f32(mask), f32(tgt_thresh), f32(tmask))[0])(maps)
    assert np.all(np.isfinite(grads)) and np.abs(grads).sum() > 0


def _segment_distance(px, py, ax, ay, bx, by):
    """Distance from a point to the segment a-b (projection clamped to the segment)."""
    t = np.clip(((px - ax) * (bx - ax) + (py - ay) * (by - ay)) / max((bx - ax) ** 2 + (by - ay) ** 2, 1e-12), 0, 1)
    return np.hypot(px - (ax + t * (bx - ax)), py - (ay + t * (by - ay)))


def test_db_targets_against_per_pixel_reference():
    boxes = np.array([[6.0, 5.0, 40.0, 17.0], [10.0, 24.0, 30.0, 35.0]])
    h, w, r = 40, 48, 0.4
    t = ocr.db_targets(boxes, height=h, width=w, shrink_ratio=r)
    prob = np.zeros((h, w))
    canvas = np.zeros((h, w))
    tmask = np.zeros((h, w))
    for x0, y0, x1, y1 in boxes:
        area, perim = (x1 - x0) * (y1 - y0), 2 * ((x1 - x0) + (y1 - y0))
        d = area * (1 - r * r) / perim                     # DB's offset for a polygon, here a rectangle
        corners = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
        for i in range(h):
            for j in range(w):
                cx, cy = j + 0.5, i + 0.5
                if x0 + d <= cx < x1 - d and y0 + d <= cy < y1 - d:
                    prob[i, j] = 1
                if x0 - d <= cx < x1 + d and y0 - d <= cy < y1 + d:
                    tmask[i, j] = 1
                    dist = min(_segment_distance(cx, cy, *corners[k], *corners[(k + 1) % 4]) for k in range(4))
                    canvas[i, j] = max(canvas[i, j], 1 - min(dist / d, 1.0))
    np.testing.assert_array_equal(t.prob, prob)
    np.testing.assert_array_equal(t.thresh_mask, tmask)
    np.testing.assert_allclose(t.thresh, 0.3 + 0.4 * canvas, atol=1e-6)
    assert t.prob_mask.all()


def test_box_postprocessing_on_synthetic_maps():
    rng = np.random.default_rng(3)
    boxes = np.array([[8.0, 6.0, 70.0, 20.0], [20.0, 40.0, 52.0, 54.0], [80.0, 30.0, 120.0, 46.0]])
    shrunk = ocr.shrink_boxes(boxes)
    np.testing.assert_allclose(ocr.unclip_boxes(shrunk), boxes, atol=1e-9)   # the exact inverse
    d = 1.5 * 10 * 4 / (2 * 14)                         # DB's unclip: area * ratio / perimeter
    np.testing.assert_allclose(ocr.unclip_boxes([[0, 0, 10, 4]], unclip_ratio=1.5), [[-d, -d, 10 + d, 4 + d]])
    prob = ocr.db_targets(boxes, height=64, width=128).prob * 0.9 + rng.uniform(0, 0.05, (64, 128))
    prob[58:62, 2:6] = 0.4                              # a faint blob: above thresh, below box_thresh
    found, scores = ocr.boxes_from_prob_map(prob, thresh=0.3, box_thresh=0.6, unclip_ratio=None)
    assert len(found) == 3 and np.all(scores > 0.85)
    order = np.argsort(found[:, 1] * 1000 + found[:, 0])
    ref_order = np.argsort(boxes[:, 1] * 1000 + boxes[:, 0])
    # the shrunk box is cut to whole pixels, so the unclipped box is within a pixel or two
    np.testing.assert_allclose(found[order], boxes[ref_order], atol=2.0)
    iou = np.asarray(box_iou(found, boxes))
    # IoU against an independent per-pair computation
    for i, a in enumerate(found):
        for j, b in enumerate(boxes):
            inter = max(0, min(a[2], b[2]) - max(a[0], b[0])) * max(0, min(a[3], b[3]) - max(a[1], b[1]))
            union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
            assert iou[i, j] == pytest.approx(inter / union, rel=1e-5)
    m = ocr.detection_metrics([found], [boxes])
    assert (m.recall, m.precision, m.ground_truth, m.detections) == (1.0, 1.0, 3, 3)
    m = ocr.detection_metrics([found[:2], np.zeros((0, 4))], [boxes, boxes[:1]])
    assert m.recall == pytest.approx(2 / 4) and m.precision == 1.0


def test_crnn_matches_the_same_network_in_paddle():
    paddle = pytest.importorskip("paddle")
    model = ocr.CRNN(num_classes=11, channels=(8, 8, 16, 16), hidden_size=12, rngs=3)
    model.eval()
    rng = np.random.default_rng(4)
    state = {}
    for key, value in model.state_dict().items():   # non-trivial batch-norm statistics
        v = np.asarray(value)
        state[key] = rng.uniform(0.5, 1.5, v.shape).astype(np.float32) if key.endswith("_variance") else \
            (rng.normal(0, 0.3, v.shape).astype(np.float32) if key.endswith("_mean") else v)
    model.set_state_dict(state)
    images = rng.uniform(size=(2, 1, 32, 48)).astype(np.float32)
    ours = np.asarray(pdx.jit(lambda m, x: m(x))(model, jnp.asarray(images)))

    pnn = paddle.nn
    strides = [(2, 2), (1, 1), (1, 1), (1, 1)]
    pools = [None, (2, 2), (2, 1), (2, 1)]
    layers, cin = [], 1
    for cout, stride, pool in zip((8, 8, 16, 16), strides, pools):
        layers += [pnn.Conv2D(cin, cout, 3, stride=stride, padding=1, bias_attr=False), pnn.BatchNorm2D(cout),
                   pnn.ReLU()]
        layers += [pnn.MaxPool2D(pool, pool)] if pool else []
        cin = cout

    class Net(pnn.Layer):
        def __init__(self):
            super().__init__()
            self.backbone = pnn.Sequential(*layers)
            self.rnn = pnn.LSTM(16, 12, direction="bidirect")
            self.head = pnn.Linear(24, 11)

        def forward(self, x):
            cols = self.backbone(x).mean(axis=2).transpose([0, 2, 1])
            return self.head(self.rnn(cols)[0])

    net = Net()
    # paddle lists each LSTM weight twice (rnn.weight_ih_l0 and its cell's rnn.0.cell_fw.weight_ih, one tensor)
    assert set(state) <= set(net.state_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # paddle warns about the cell aliases it skips
        net.set_state_dict({k: paddle.to_tensor(np.asarray(v)) for k, v in state.items()})
    net.eval()
    x = images - images.mean(axis=(1, 2, 3), keepdims=True)
    x = x / (np.sqrt((x * x).mean(axis=(1, 2, 3), keepdims=True)) + 1e-3)
    x = x * np.where((x ** 3).mean(axis=(1, 2, 3), keepdims=True) < 0, -1.0, 1.0)
    theirs = net(paddle.to_tensor(x.astype(np.float32))).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)


def test_rendered_data_is_deterministic_and_labelled():
    a = ocr.make_recognition_batch(6, seed=(5, 1), width=96, max_len=6)
    b = ocr.make_recognition_batch(6, seed=(5, 1), width=96, max_len=6)
    np.testing.assert_array_equal(a.images, b.images)
    assert a.images.shape == (6, 1, 32, 96) and a.images.dtype == np.float32
    assert 0.0 <= a.images.min() and a.images.max() <= 1.0
    assert [ocr.decode_ids(row) for row in a.labels] == a.texts
    assert a.lengths.tolist() == [len(t) for t in a.texts] and all(3 <= len(t) <= 6 for t in a.texts)
    held_out = ocr.random_strings(300, seed=0, alphabet="ab", min_len=3, max_len=3)
    assert len(set(held_out)) == 8                       # every 3-letter string over "ab"
    with pytest.raises(ValueError, match="too small"):
        ocr.make_recognition_batch(1, seed=0, width=32)
    kept = ocr.random_strings(50, seed=1, alphabet="ab", min_len=3, max_len=4, exclude=set(held_out))
    assert all(len(t) == 4 for t in kept)                # the held-out strings are never drawn
    scenes = ocr.make_detection_batch(3, seed=2, height=96, width=128)
    for image, boxes, texts in zip(scenes.images, scenes.boxes, scenes.texts):
        assert len(boxes) == len(texts) >= 1
        iou = np.asarray(box_iou(boxes, boxes))
        assert np.allclose(np.diag(iou), 1) and np.all(iou[~np.eye(len(boxes), dtype=bool)] == 0)
        for x0, y0, x1, y1 in boxes.astype(int):         # the ink differs from the background in each box
            assert image[0, y0:y1, x0:x1].std() > 0.1
