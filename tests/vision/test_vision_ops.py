"""pdx.vision.ops against paddle.vision.ops on random inputs: values (1e-5),
gradients where Paddle has them (1e-4), jit behaviour and bad input."""

from __future__ import annotations

import io

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx.vision import ops


def _close(ours, theirs, tol=1e-5):
    """Max abs difference within `tol` times the reference's scale."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    if ours.size == 0:
        return
    scale = max(1.0, float(np.abs(theirs).max()))
    err = float(np.abs(ours.astype(np.float64) - theirs).max())
    assert err <= tol * scale, f"max |pdx - paddle| = {err:.3g}, scale {scale:.3g}"


def _boxes(rng, n, size=10.0, min_wh=1.0):
    xy = rng.uniform(0, size, (n, 2))
    wh = rng.uniform(min_wh, size, (n, 2))
    return np.concatenate([xy, xy + wh], 1).astype("float32")


def _grads(paddle, fn, arrays, cotangent):
    """Paddle's gradients of sum(fn(*arrays) * cotangent) for every input."""
    ts = [paddle.to_tensor(a, stop_gradient=False) for a in arrays]
    (fn(*ts) * paddle.to_tensor(cotangent)).sum().backward()
    return [t.grad.numpy() for t in ts]


def test_roi_ops_match_paddle(paddle, rng):
    P = paddle.to_tensor
    x = rng.standard_normal((2, 8, 12, 10)).astype("float32")
    boxes = _boxes(rng, 5, 20.0, 0.5)  # some past the feature map, some thinner than a bin
    num = np.array([2, 3], "int32")
    for aligned in (True, False):
        for ratio in (-1, 2):
            _close(ops.roi_align(x, boxes, num, (3, 2), 0.5, ratio, aligned),
                   paddle.vision.ops.roi_align(P(x), P(boxes), P(num), (3, 2), 0.5, ratio, aligned).numpy())
    _close(ops.roi_pool(x, boxes, num, (3, 2), 0.5),
           paddle.vision.ops.roi_pool(P(x), P(boxes), P(num), (3, 2), 0.5).numpy())
    _close(ops.psroi_pool(x, boxes, num, 2, 0.5),
           paddle.vision.ops.psroi_pool(P(x), P(boxes), P(num), 2, 0.5).numpy())
    _close(ops.RoIAlign(2, 0.5)(x, boxes, num), paddle.vision.ops.RoIAlign(2, 0.5)(P(x), P(boxes), P(num)).numpy())
    _close(ops.RoIPool(2, 0.5)(x, boxes, num), paddle.vision.ops.RoIPool(2, 0.5)(P(x), P(boxes), P(num)).numpy())
    _close(ops.PSRoIPool(2, 0.5)(x, boxes, num),
           paddle.vision.ops.PSRoIPool(2, 0.5)(P(x), P(boxes), P(num)).numpy())

    # Gradients. Paddle's roi_align backward clamps boxes to at least one feature
    # pixel even when aligned=True (its forward does not), so the boxes here are
    # at least that large, where Paddle's backward is the derivative of its forward.
    big = _boxes(rng, 5, 16.0, 2.5)
    g = rng.standard_normal((5, 8, 3, 2)).astype("float32")
    (theirs,) = _grads(paddle, lambda t: paddle.vision.ops.roi_align(t, P(big), P(num), (3, 2), 0.5, 2), [x], g)
    ours = jax.grad(lambda x: (ops.roi_align(x, big, num, (3, 2), 0.5, 2) * g).sum())(jnp.asarray(x))
    _close(ours, theirs, 1e-4)
    g = rng.standard_normal((5, 2, 2, 2)).astype("float32")
    (theirs,) = _grads(paddle, lambda t: paddle.vision.ops.psroi_pool(t, P(boxes), P(num), 2, 0.5), [x], g)
    ours = jax.grad(lambda x: (ops.psroi_pool(x, boxes, num, 2, 0.5) * g).sum())(jnp.asarray(x))
    _close(ours, theirs, 1e-4)

    # Under jit: fixed sampling works; the adaptive grid needs concrete boxes.
    jitted = pdx.jit(lambda x, b: ops.roi_align(x, b, jnp.array([2, 3]), 2, 0.5, sampling_ratio=2))
    _close(jitted(jnp.asarray(x), jnp.asarray(boxes)), ops.roi_align(x, boxes, num, 2, 0.5, 2))
    with pytest.raises(ValueError, match="sampling_ratio"):
        pdx.jit(lambda x, b: ops.roi_align(x, b, jnp.array([2, 3]), 2))(jnp.asarray(x), jnp.asarray(boxes))
    with pytest.raises(ValueError, match="boxes_num"):
        ops.roi_align(x, boxes, np.array([1, 1]), 2)
    with pytest.raises(ValueError, match="divisible"):
        ops.psroi_pool(x, boxes, num, 3)


def test_deform_conv2d_matches_paddle(paddle, rng):
    P = paddle.to_tensor
    for dg, groups, stride, pad, dil, with_mask in ((1, 1, 1, 1, 1, False), (2, 2, 2, 1, 1, True),
                                                   (2, 1, 1, 2, 2, True)):
        x = rng.standard_normal((2, 4, 7, 6)).astype("float32")
        w = rng.standard_normal((6, 4 // groups, 3, 3)).astype("float32")
        b = rng.standard_normal(6).astype("float32")
        ho, wo = (7 + 2 * pad - 2 * dil - 1) // stride + 1, (6 + 2 * pad - 2 * dil - 1) // stride + 1
        off = (rng.standard_normal((2, 2 * dg * 9, ho, wo)) * 2).astype("float32")  # samples fall outside too
        arrays = [x, off, w, b] + ([rng.uniform(0, 1, (2, dg * 9, ho, wo)).astype("float32")] if with_mask else [])
        kw = dict(stride=stride, padding=pad, dilation=dil, deformable_groups=dg, groups=groups)
        ours = ops.deform_conv2d(*arrays[:4], mask=arrays[4] if with_mask else None, **kw)
        out = paddle.vision.ops.deform_conv2d(*map(P, arrays[:4]), mask=P(arrays[4]) if with_mask else None, **kw)
        _close(ours, out.numpy())
        g = rng.standard_normal(out.shape).astype("float32")
        theirs = _grads(paddle, lambda *t: paddle.vision.ops.deform_conv2d(
            *t[:4], mask=t[4] if with_mask else None, **kw), arrays, g)
        f = lambda *a: (ops.deform_conv2d(*a[:4], mask=a[4] if with_mask else None, **kw) * g).sum()  # noqa: E731
        for o, t in zip(jax.grad(f, argnums=tuple(range(len(arrays))))(*arrays), theirs):
            _close(o, t, 1e-4)
    # The layer with Paddle's parameter names, under jit.
    pd_layer = paddle.vision.ops.DeformConv2D(4, 6, 3, padding=1, deformable_groups=2)
    layer = ops.DeformConv2D(4, 6, 3, padding=1, deformable_groups=2)
    assert list(layer.state_dict()) == list(pd_layer.state_dict()) == ["weight", "bias"]
    layer.set_state_dict({k: v.numpy() for k, v in pd_layer.state_dict().items()})
    x = rng.standard_normal((1, 4, 5, 5)).astype("float32")
    off = rng.standard_normal((1, 36, 5, 5)).astype("float32")
    _close(pdx.jit(lambda m, x, o: m(x, o))(layer, x, off), pd_layer(P(x), P(off)).numpy())
    with pytest.raises(ValueError, match="offset must have shape"):
        ops.deform_conv2d(x, off[:, :18], layer.weight.get_value())


def test_box_ops_match_paddle(paddle, rng):
    P = paddle.to_tensor
    prior, target = _boxes(rng, 5), _boxes(rng, 3)
    var = rng.uniform(0.1, 0.5, (5, 4)).astype("float32")
    for normalized in (True, False):
        for v in (var, [0.1, 0.1, 0.2, 0.2]):
            pv = P(v) if isinstance(v, np.ndarray) else v
            _close(ops.box_coder(prior, v, target, "encode_center_size", normalized),
                   paddle.vision.ops.box_coder(P(prior), pv, P(target), "encode_center_size", normalized).numpy())
            for axis in (0, 1):
                deltas = (rng.standard_normal((5, 5, 4)) * 0.5).astype("float32")
                _close(ops.box_coder(prior, v, deltas, "decode_center_size", normalized, axis),
                       paddle.vision.ops.box_coder(P(prior), pv, P(deltas), "decode_center_size", normalized,
                                                   axis).numpy())
    feat, img = np.zeros((1, 3, 3, 4), "float32"), np.zeros((1, 3, 30, 40), "float32")
    for kw in (dict(min_sizes=[4.0, 8.0], max_sizes=[6.0, 12.0], aspect_ratios=[2.0, 3.0], flip=True, clip=True),
               dict(min_sizes=[4.0], max_sizes=[9.0], aspect_ratios=[2.0], steps=[8.0, 9.0], offset=0.3,
                    min_max_aspect_ratios_order=True, variance=[0.1, 0.2, 0.3, 0.4])):
        for o, t in zip(ops.prior_box(feat, img, **kw), paddle.vision.ops.prior_box(P(feat), P(img), **kw)):
            _close(o, t.numpy())
    anchors = [10, 13, 16, 30, 33, 23]
    for kw in (dict(), dict(clip_bbox=False, scale_x_y=1.2), dict(iou_aware=True, iou_aware_factor=0.4)):
        ch = 3 * 9 + (3 if kw.get("iou_aware") else 0)
        x = rng.standard_normal((2, ch, 5, 6)).astype("float32")
        sizes = np.array([[160, 190], [150, 200]], "int32")
        ours = pdx.jit(lambda x, s: ops.yolo_box(x, s, anchors, 4, 0.5, 32, **kw))(x, sizes)
        for o, t in zip(ours, paddle.vision.ops.yolo_box(P(x), P(sizes), anchors, 4, 0.5, 32, **kw)):
            _close(o, t.numpy())
    with pytest.raises(ValueError, match="code_type"):
        ops.box_coder(prior, var, target, "center")
    with pytest.raises(ValueError, match="channels"):
        ops.yolo_box(np.zeros((1, 10, 2, 2)), np.array([[8, 8]]), anchors, 4, 0.5, 32)


def test_nms_ops_match_paddle(paddle, rng):
    P = paddle.to_tensor
    boxes, scores = _boxes(rng, 40), rng.uniform(0, 1, 40).astype("float32")
    cats = rng.integers(0, 4, 40).astype("int64")
    for kw in (dict(), dict(scores=scores), dict(scores=scores, category_idxs=cats, categories=[0, 1, 3]),
               dict(scores=scores, category_idxs=cats, categories=[0, 1, 2, 3], top_k=7)):
        theirs = paddle.vision.ops.nms(P(boxes), 0.3, **{k: P(v) if isinstance(v, np.ndarray) else v
                                                         for k, v in kw.items()}).numpy()
        assert np.asarray(ops.nms(boxes, 0.3, **kw)).tolist() == theirs.tolist()
    bboxes = np.stack([_boxes(rng, 30, 1.0, 0.05) for _ in range(2)])
    cls_scores = rng.uniform(0, 1, (2, 4, 30)).astype("float32")
    for kw in (dict(), dict(use_gaussian=True, gaussian_sigma=1.5, keep_top_k=-1),
               dict(background_label=-1, normalized=False, nms_top_k=10, keep_top_k=15)):
        args = dict(score_threshold=0.3, post_threshold=0.2, nms_top_k=20, keep_top_k=25, return_index=True)
        args.update(kw)
        ours = ops.matrix_nms(bboxes, cls_scores, **args)
        theirs = paddle.vision.ops.matrix_nms(P(bboxes), P(cls_scores), **args)
        _close(ours[0], theirs[0].numpy())
        assert np.asarray(ours[1]).tolist() == theirs[1].numpy().tolist()
        assert np.asarray(ours[2]).ravel().tolist() == theirs[2].numpy().ravel().tolist()
    with pytest.raises(ValueError, match="pdx.models.detection.nms"):
        pdx.jit(lambda b: ops.nms(b, 0.5))(jnp.asarray(boxes))


def test_proposal_ops_match_paddle(paddle, rng):
    P = paddle.to_tensor
    n, a, h, w = 2, 3, 4, 5
    scores = rng.uniform(0, 1, (n, a, h, w)).astype("float32")
    deltas = (rng.standard_normal((n, 4 * a, h, w)) * 0.3).astype("float32")
    xy, wh = rng.uniform(0, 50, (h, w, a, 2)), rng.uniform(4, 30, (h, w, a, 2))
    anchors = np.concatenate([xy, xy + wh], -1).astype("float32")
    variances = rng.uniform(0.5, 1.5, anchors.shape).astype("float32")
    sizes = np.array([[60, 70], [50, 64]], "float32")
    for kw in (dict(), dict(pre_nms_top_n=30, post_nms_top_n=10, nms_thresh=0.7, pixel_offset=True, min_size=3.0),
               dict(eta=0.9, nms_thresh=0.8, post_nms_top_n=-1)):
        ours = ops.generate_proposals(scores, deltas, sizes, anchors, variances, return_rois_num=True, **kw)
        theirs = paddle.vision.ops.generate_proposals(P(scores), P(deltas), P(sizes), P(anchors), P(variances),
                                                      return_rois_num=True, **kw)
        for o, t in zip(ours, theirs):
            _close(o, t.numpy())
    rois = _boxes(rng, 20, 200.0)
    rois[:, 2:] += rng.uniform(0, 400, (20, 2)).astype("float32")
    for pixel_offset in (False, True):
        ours = ops.distribute_fpn_proposals(rois, 2, 5, 4, 224, pixel_offset, rois_num=np.array([8, 12], "int32"))
        theirs = paddle.vision.ops.distribute_fpn_proposals(P(rois), 2, 5, 4, 224, pixel_offset,
                                                            rois_num=P(np.array([8, 12], "int32")))
        for o, t in zip(ours[0], theirs[0]):
            _close(o, t.numpy().reshape(-1, 4))
        assert np.asarray(ours[1]).tolist() == theirs[1].numpy().tolist()
        assert [np.asarray(o).tolist() for o in ours[2]] == [t.numpy().tolist() for t in theirs[2]]
    with pytest.raises(ValueError, match="min_level"):
        ops.distribute_fpn_proposals(rois, 3, 3, 4, 224)


def test_read_file_and_decode_jpeg(paddle, tmp_path, rng):
    from PIL import Image

    # A smooth random image, which JPEG keeps almost exactly at full chroma resolution.
    yy, xx = np.mgrid[0:12, 0:10]
    base = rng.uniform(0, 200, 3) + rng.uniform(-4, 4, 3) * (yy[..., None] + xx[..., None])
    pixels = np.clip(base, 0, 255).astype(np.uint8)
    path = tmp_path / "img.jpg"
    Image.fromarray(pixels).save(path, quality=95, subsampling=0)
    data = ops.read_file(str(path))
    assert data.dtype == jnp.uint8
    assert np.asarray(data).tolist() == paddle.vision.ops.read_file(str(path)).numpy().tolist()
    rgb = ops.decode_jpeg(data)
    assert rgb.shape == (3, 12, 10) and rgb.dtype == jnp.uint8
    assert ops.decode_jpeg(data, mode="gray").shape == (1, 12, 10)
    # Independent check of the decoded pixels: close to what was written (JPEG is lossy).
    assert np.abs(np.transpose(np.asarray(rgb), (1, 2, 0)).astype(int) - pixels).max() <= 8
    gray_path = tmp_path / "gray.jpg"
    Image.fromarray(pixels[..., 0]).save(gray_path)
    gray = ops.read_file(str(gray_path))
    assert ops.decode_jpeg(gray).shape == (1, 12, 10)
    assert ops.decode_jpeg(gray, mode="rgb").shape == (3, 12, 10)

    png = io.BytesIO()
    Image.fromarray(pixels).save(png, "PNG")
    raw = np.asarray(data)
    for bad, match in ((np.frombuffer(png.getvalue(), np.uint8), "not a JPEG"), (raw[: len(raw) // 2], "valid JPEG"),
                       (raw[:3], "valid JPEG"), (raw.astype(np.int32), "uint8"), (raw[None], "1-D")):
        with pytest.raises(ValueError, match=match):
            ops.decode_jpeg(bad)
    # A header announcing a huge image is refused before any pixel is allocated.
    huge = bytearray(raw.tobytes())
    sof = huge.find(b"\xff\xc0")
    huge[sof + 5:sof + 9] = (65000).to_bytes(2, "big") * 2
    with pytest.raises(ValueError, match="over the limit"):
        ops.decode_jpeg(np.frombuffer(bytes(huge), np.uint8))
    with pytest.raises(ValueError, match="mode"):
        ops.decode_jpeg(data, mode="cmyk")
    with pytest.raises(ValueError, match="directory"):
        ops.read_file(str(tmp_path))
    with pytest.raises(ValueError, match="does not exist"):
        ops.read_file(str(tmp_path / "missing.jpg"))


def test_conv_norm_activation_matches_paddle(paddle, rng):
    paddle.seed(0)
    pd_block = paddle.vision.ops.ConvNormActivation(3, 8, 3, stride=2, activation_layer=paddle.nn.Hardswish)
    block = ops.ConvNormActivation(3, 8, 3, stride=2, activation_layer=pdx.nn.Hardswish)
    assert list(block.state_dict()) == list(pd_block.state_dict())
    block.set_state_dict({k: v.numpy() for k, v in pd_block.state_dict().items()})
    x = rng.standard_normal((1, 3, 9, 9)).astype("float32")
    _close(block.eval()(x), pd_block.eval()(paddle.to_tensor(x)).numpy())
    no_norm = ops.ConvNormActivation(3, 4, 1, norm_layer=None, activation_layer=None)
    assert list(no_norm.state_dict()) == ["0.weight", "0.bias"]


def test_yolo_loss_matches_paddle(paddle, rng):
    P = paddle.to_tensor
    anchors = [10, 13, 16, 30, 33, 23, 30, 61, 62, 45, 59, 119]
    for mask, kw in (([0, 1, 2], {}), ([3, 4, 5], dict(use_label_smooth=False, scale_x_y=1.1)),
                     ([1, 2], dict(gt_score=rng.uniform(0.3, 1, (2, 5)).astype("float32")))):
        x = rng.standard_normal((2, len(mask) * 8, 6, 6)).astype("float32")
        gt = np.concatenate([rng.uniform(0.1, 0.9, (2, 5, 2)), rng.uniform(0.05, 0.5, (2, 5, 2))], -1)
        gt = gt.astype("float32")
        gt[0, 4] = 0  # a padding row
        labels = rng.integers(0, 3, (2, 5)).astype("int32")
        g = rng.uniform(0.5, 1.5, 2).astype("float32")
        pkw = {k: P(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        xt = P(x, stop_gradient=False)
        theirs = paddle.vision.ops.yolo_loss(xt, P(gt), P(labels), anchors, mask, 3, 0.5, 32, **pkw)
        (theirs * P(g)).sum().backward()
        loss = lambda x: ops.yolo_loss(x, gt, labels, anchors, mask, 3, 0.5, 32, **kw)  # noqa: E731
        _close(pdx.jit(loss)(jnp.asarray(x)), theirs.numpy())
        _close(jax.grad(lambda x: (loss(x) * g).sum())(jnp.asarray(x)), xt.grad.numpy(), 1e-4)
    with pytest.raises(ValueError, match="channels"):
        ops.yolo_loss(np.zeros((1, 7, 2, 2)), gt[:1], labels[:1], anchors, [0, 1], 3, 0.5, 32)
