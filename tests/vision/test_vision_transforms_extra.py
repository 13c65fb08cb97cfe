"""pdx.vision.transforms functionals and the transforms built on them, against paddle.vision.transforms.

Paddle's numpy backend needs OpenCV (not installed), so numpy inputs are
checked against Paddle's PIL backend on the same pixels: pdx samples numpy
images the way PIL does. jax CHW inputs are checked against Paddle's tensor
path where both take tensors.
"""

import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image

from pdx.io import _worker
from pdx.vision import transforms as T
from pdx.vision.transforms import _image
from pdx.vision.transforms import functional as TF


@pytest.fixture
def PF(paddle):
    from paddle.vision.transforms import functional

    return functional


@pytest.fixture
def PT(paddle):
    from paddle.vision import transforms

    return transforms


@pytest.fixture(params=[False, True], ids=["numpy-route", "pil-route"])
def route(request, monkeypatch):
    """uint8 numpy images through pdx's numpy code, then through the PIL fast path: both must match Paddle."""
    monkeypatch.setattr(_image, "PIL_FAST_PATH", request.param)
    return request.param


@pytest.fixture
def images(rng):
    """uint8 images of odd sizes: RGB 13x17, grey 13x17, RGB 16x11."""
    return [rng.integers(0, 256, size=s).astype(np.uint8) for s in ((13, 17, 3), (13, 17), (16, 11, 3))]


def _check_same(ours_np, ours_pil, ref_pil, what, atol=0):
    ref = np.asarray(ref_pil)
    assert isinstance(ours_pil, Image.Image), f"{what}: PIL in should give PIL out"
    assert isinstance(ours_np, np.ndarray), f"{what}: numpy in should give numpy out"
    assert ours_pil.mode == ref_pil.mode, what
    np.testing.assert_array_equal(np.asarray(ours_pil), ref, err_msg=f"{what} (PIL)")
    got = ours_np if ours_np.shape == ref.shape else ours_np.reshape(ref.shape)
    assert got.dtype == np.uint8, what
    np.testing.assert_allclose(got.astype(int), ref.astype(int), atol=atol, rtol=0, err_msg=f"{what} (numpy)")


def test_geometric_functionals_match_paddle(PF, images, route):
    for a in images:
        p = Image.fromarray(a)
        h, w = a.shape[:2]
        grey = a.ndim == 2
        fill0 = (0,) if grey else 0  # Paddle's PIL rotate turns an int fill into an RGB triple, which "L" rejects
        corners = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
        moved = [[2, 1], [w - 2, 0], [w - 3, h - 2], [1, h - 3]]
        cases = [
            ("hflip", (), {}), ("vflip", (), {}), ("crop", (2, 3, 7, 5), {}), ("center_crop", (5,), {}),
            ("center_crop", ((6, 9),), {}),
            ("pad", (2,), {}), ("pad", ((1, 3),), {"padding_mode": "edge"}),
            ("pad", ((1, 2, 3, 4),), {"padding_mode": "reflect"}), ("pad", (2,), {"padding_mode": "symmetric"}),
            # PIL's expand reads an int fill on RGB as a packed colour ((9, 0, 0)); pdx fills every channel
            ("pad", ((1, 2),), {"fill": 9 if grey else (9, 9, 9)}),
            ("rotate", (30,), {"fill": fill0}), ("rotate", (-47.5,), {"expand": True, "fill": fill0}),
            ("rotate", (90,), {"fill": fill0}), ("rotate", (270,), {"expand": True, "fill": fill0}),
            ("rotate", (-180,), {"fill": fill0}), ("rotate", (33,), {"center": (3, 4), "fill": (7,) if grey else 7}),
            ("rotate", (30,), {"interpolation": "bilinear", "fill": fill0}),
            ("rotate", (200,), {"interpolation": "bilinear", "expand": True, "fill": (9,) if grey else 9}),
            # Paddle's PIL affine/perspective drop `fill` (it lands on PIL's fill flag), so compare with fill=0
            ("affine", (20, (2, -1), 1.2, (10, 5)), {}), ("affine", (0, (2, -1), 0.8, 0), {}),
            ("affine", (-35, (0, 3), 1.0, 15), {"interpolation": "bilinear", "center": (4, 5)}),
            ("perspective", (corners, moved), {}), ("perspective", (corners, moved), {"interpolation": "bilinear"}),
            ("rotate", (-70,), {"interpolation": "bicubic", "expand": True, "fill": fill0}),
            ("affine", (15, (1, 2), 0.9, (-8, 4)), {"interpolation": "bicubic"}),
            ("perspective", (corners, moved), {"interpolation": "bicubic"}),
        ]
        if not grey:
            cases.append(("pad", (1,), {"fill": (10, 20, 30)}))
        for name, args, kw in cases:
            what = f"{name}{args}{kw} on {a.shape}"
            _check_same(getattr(TF, name)(a, *args, **kw), getattr(TF, name)(p, *args, **kw),
                        getattr(PF, name)(p, *args, **kw), what)
        for size in (5, (6, 9)):
            for interp in ("bilinear", "nearest", "bicubic"):
                ours = T.resize(p, size, interp)
                assert isinstance(ours, Image.Image)
                np.testing.assert_array_equal(np.asarray(ours), np.asarray(PF.resize(p, size, interp)))
        assert T.resize(a, 5).shape[:2] == np.asarray(PF.resize(p, 5)).shape[:2]


def test_warp_fill_is_honoured(images, route):
    # Paddle drops fill for PIL affine/perspective; pdx honours it, the same way for PIL and numpy.
    a = images[0]
    p = Image.fromarray(a)
    for name, args in (("affine", (25, (3, 1), 0.7, 0)), ("perspective", ([[0, 0], [16, 0], [16, 12], [0, 12]],
                                                                          [[3, 2], [14, 0], [12, 10], [1, 11]]))):
        out_np = getattr(TF, name)(a, *args, fill=(5, 6, 7))
        out_pil = np.asarray(getattr(TF, name)(p, *args, fill=(5, 6, 7)))
        np.testing.assert_array_equal(out_np, out_pil)
        outside = np.all(getattr(TF, name)(np.ones_like(a), *args, fill=0) == 0, axis=-1)
        assert outside.any() and np.all(out_np[outside] == [5, 6, 7])


def test_color_functionals_match_paddle(PF, images, route):
    for a in images[:2]:
        p = Image.fromarray(a)
        cases = [("adjust_brightness", 1.3), ("adjust_brightness", 0.37), ("adjust_contrast", 1.7),
                 ("adjust_contrast", 0.4), ("adjust_saturation", 1.6), ("adjust_saturation", 0.3),
                 ("adjust_hue", 0.2), ("adjust_hue", -0.45), ("adjust_hue", 0.0)]
        if a.ndim == 3:
            cases += [("to_grayscale", 1), ("to_grayscale", 3)]
        for name, factor in cases:
            # exact: numpy uint8 colour ops follow PIL's integer grey weights, truncating blend and the
            # float/double types of its HSV conversion (OpenCV, Paddle's numpy backend, rounds differently)
            _check_same(getattr(TF, name)(a, factor), getattr(TF, name)(p, factor), getattr(PF, name)(p, factor),
                        f"{name}({factor}) on {a.shape}")


def test_jax_chw_inputs_match_paddle_tensors(paddle, PF, rng, route):
    u8 = rng.integers(0, 256, size=(3, 13, 17)).astype(np.uint8)
    x = u8.astype(np.float32) / 255.0
    xj, xp = jnp.asarray(x), paddle.to_tensor(x)
    exact = [("hflip", ()), ("vflip", ()), ("crop", (2, 3, 7, 5)), ("center_crop", (5,)), ("pad", ((1, 2, 3, 4),)),
             ("erase", (2, 3, 4, 5, paddle.to_tensor([0.1, 0.2, 0.3])[:, None, None]))]
    for name, args in exact:
        ours_args = tuple(np.asarray(v.numpy()) if isinstance(v, paddle.Tensor) else v for v in args)
        ours = getattr(TF, name)(xj, *ours_args)
        assert isinstance(ours, type(xj)), name
        np.testing.assert_allclose(np.asarray(ours), getattr(PF, name)(xp, *args).numpy(), rtol=0, atol=1e-7,
                                   err_msg=name)
    # float images in [0, 1]: blends without rounding, as Paddle's tensor path
    for name, factor in (("adjust_brightness", 1.4), ("adjust_contrast", 0.6), ("adjust_saturation", 1.7),
                         ("adjust_hue", 0.3), ("to_grayscale", 3)):
        np.testing.assert_allclose(np.asarray(getattr(TF, name)(xj, factor)), getattr(PF, name)(xp, factor).numpy(),
                                   atol=2e-6, err_msg=name)
    # warps on jax arrays sample like PIL (see the _geometry docstring), so they agree with the HWC numpy path
    hwc = u8.transpose(1, 2, 0)
    for name, args in (("rotate", (30,)), ("affine", (20, (2, -1), 1.2, (10, 5))),
                       ("perspective", ([[0, 0], [16, 0], [16, 12], [0, 12]], [[2, 1], [15, 0], [14, 11], [1, 10]]))):
        np.testing.assert_array_equal(np.asarray(getattr(TF, name)(jnp.asarray(u8), *args)).transpose(1, 2, 0),
                                      getattr(TF, name)(hwc, *args), err_msg=name)


def test_erase_normalize_to_tensor_match_paddle(PF, images):
    a = images[0]
    v = np.array([1, 2, 3])[None, None, :]
    np.testing.assert_array_equal(TF.erase(a, 2, 3, 4, 5, v), PF.erase(a, 2, 3, 4, 5, v))
    np.testing.assert_array_equal(np.asarray(TF.erase(Image.fromarray(a), 2, 3, 4, 5, v)),
                                  np.asarray(PF.erase(Image.fromarray(a), 2, 3, 4, 5, v)))
    b = a.copy()
    assert TF.erase(b, 0, 0, 1, 1, 0, inplace=True) is b and b[0, 0].tolist() == [0, 0, 0]
    np.testing.assert_allclose(TF.to_tensor(a), PF.to_tensor(a).numpy(), rtol=1e-6)
    chw = TF.to_tensor(a)
    np.testing.assert_allclose(TF.normalize(chw, [0.4, 0.5, 0.6], [0.2, 0.3, 0.25]),
                               PF.normalize(chw, [0.4, 0.5, 0.6], [0.2, 0.3, 0.25]), rtol=1e-6)


def test_deterministic_transforms_match_paddle(PT, images):
    for a in images:
        p = Image.fromarray(a)
        ts = [("Pad", ((1, 2, 3, 4),), {"padding_mode": "reflect"}), ("Pad", (2,), {"fill": 3 if a.ndim == 2 else (3, 3, 3)}),
              ("Transpose", (), {}), ("Transpose", ((1, 0, 2),), {})]
        if a.ndim == 3:
            ts += [("Grayscale", (), {}), ("Grayscale", (3,), {})]
        for name, args, kw in ts:
            ref = getattr(PT, name)(*args, **kw)(p)
            for src in (a, p):
                np.testing.assert_array_equal(np.asarray(getattr(T, name)(*args, **kw)(src)).squeeze(),
                                              np.asarray(ref).squeeze(), err_msg=f"{name}{args}{kw}")
    img, label = T.Pad(1, keys=("image", "label"))((images[0], 3))
    assert img.shape == (15, 19, 3) and label == 3

    class FlipWithBoxes(T.BaseTransform):  # Paddle dispatches every key to _apply_<key>
        def _apply_image(self, img):
            return TF.hflip(img)

        def _apply_boxes(self, boxes):
            return np.stack([17 - boxes[:, 2], boxes[:, 1], 17 - boxes[:, 0], boxes[:, 3]], 1)

    img, boxes, label = FlipWithBoxes(keys=("image", "boxes", "label"))((images[0], np.array([[1, 2, 5, 6]]), 7))
    assert boxes.tolist() == [[12, 2, 16, 6]] and label == 7
    np.testing.assert_array_equal(img, images[0][:, ::-1])


def test_random_transforms_with_pinned_randomness_match_paddle(PF, images, route):
    for a in images[:2]:
        p = Image.fromarray(a)
        fill = (0,) if a.ndim == 2 else 0
        pinned = [
            (T.BrightnessTransform((1.3, 1.3)), PF.adjust_brightness(p, 1.3)),
            (T.ContrastTransform((0.6, 0.6)), PF.adjust_contrast(p, 0.6)),
            (T.SaturationTransform((1.8, 1.8)), PF.adjust_saturation(p, 1.8)),
            (T.HueTransform((0.2, 0.2)), PF.adjust_hue(p, 0.2)),
            (T.ColorJitter(brightness=(1.3, 1.3)), PF.adjust_brightness(p, 1.3)),
            (T.ColorJitter(contrast=(0.5, 0.5), saturation=(1.0, 1.0)), PF.adjust_contrast(p, 0.5)),
            (T.RandomVerticalFlip(prob=1.0), PF.vflip(p)),
            (T.RandomVerticalFlip(prob=0.0), p),
            (T.RandomRotation((30, 30), fill=fill), PF.rotate(p, 30, fill=fill)),
            (T.RandomRotation((-20, -20), interpolation="bilinear", expand=True, fill=fill),
             PF.rotate(p, -20, interpolation="bilinear", expand=True, fill=fill)),
            (T.RandomAffine((20, 20), scale=(1.2, 1.2), shear=(10, 10, 5, 5)), PF.affine(p, 20, (0, 0), 1.2, (10, 5))),
            (T.RandomPerspective(prob=1.0, distortion_scale=0.0), p),  # corners cannot move
            (T.RandomPerspective(prob=0.0), p),
        ]
        for t, ref in pinned:
            for src in (a, p):
                out = t(src)
                assert type(out) is type(src), t
                np.testing.assert_array_equal(np.asarray(out), np.asarray(ref), err_msg=repr(t))


def test_random_transforms_properties(PF, images):
    a = images[0]
    p = Image.fromarray(a)
    for src in (a, p, jnp.asarray(a.transpose(2, 0, 1))):
        out = T.RandomResizedCrop((5, 7))(src)
        assert (np.asarray(out).shape[:2] if not hasattr(out, "devices") else out.shape[1:]) == (5, 7)
    # the whole image is the only crop with scale 1 and the image's own aspect ratio
    whole = T.RandomResizedCrop((6, 8), scale=(1.0, 1.0), ratio=(17 / 13, 17 / 13))(p)
    np.testing.assert_array_equal(np.asarray(whole), np.asarray(PF.resize(p, (6, 8))))
    np.random.seed(3)
    first = T.ColorJitter(0.4, 0.4, 0.4, 0.1)(a)
    np.random.seed(3)
    np.testing.assert_array_equal(T.ColorJitter(0.4, 0.4, 0.4, 0.1)(a), first)

    # inside a DataLoader every draw comes from the sample's own Generator: a function of (seed, epoch, index)
    t = T.Compose([T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomAffine(20, translate=(0.1, 0.1), shear=5),
                   T.RandomErasing(prob=0.7)])

    def run(seed, index):
        scope = _worker._SampleScope(seed, 0, None)
        scope.enter(index)
        try:
            return t(a)
        finally:
            scope.leave()

    np.testing.assert_array_equal(run(1, 4), run(1, 4))
    assert len({run(1, i).tobytes() for i in range(6)}) == 6
    assert not np.array_equal(run(1, 4), run(2, 4))

    zeros = np.zeros((20, 24, 3), np.uint8)
    for _ in range(5):
        out = T.RandomErasing(prob=1.0, scale=(0.1, 0.2), value=(1, 2, 3))(zeros)
        rows, cols = np.nonzero(out[..., 0])
        box = out[rows.min():rows.max() + 1, cols.min():cols.max() + 1]
        assert np.all(box == [1, 2, 3]) and 0.05 * 480 <= box.shape[0] * box.shape[1] <= 0.25 * 480
    assert np.asarray(T.RandomErasing(prob=1.0, value=7)(Image.fromarray(zeros))).max() == 7
    assert T.RandomErasing(prob=1.0, value="random")(zeros.astype(np.float32)).std() > 0
    out = T.RandomErasing(prob=1.0, value=0.5)(jnp.zeros((3, 20, 24)))
    assert float(out.max()) == 0.5 and out.shape == (3, 20, 24)
    assert T.RandomErasing(prob=0.0)(zeros) is zeros
    pal = Image.fromarray(images[1]).convert("P")
    padded = TF.pad(pal, 1, padding_mode="edge")
    assert padded.mode == "P" and padded.getpalette() == pal.getpalette()


def test_bad_arguments_name_the_argument(images):
    a = images[0]
    bad = [
        (ValueError, "padding_mode", lambda: T.Pad(1, padding_mode="wrap")),
        (ValueError, "padding_mode", lambda: TF.pad(a, 1, padding_mode="wrap")),
        (ValueError, "padding", lambda: T.Pad((1, 2, 3))),
        (ValueError, "value", lambda: T.BrightnessTransform(-0.5)),
        (ValueError, "value", lambda: T.HueTransform(0.7)),
        (ValueError, "saturation", lambda: T.ColorJitter(saturation=-1)),
        (ValueError, "hue", lambda: T.ColorJitter(hue=(0.1, 0.9))),
        (ValueError, "brightness_factor", lambda: TF.adjust_brightness(a, -1)),
        (ValueError, "hue_factor", lambda: TF.adjust_hue(a, 0.6)),
        (ValueError, "keys", lambda: T.Grayscale(keys="image")),
        (ValueError, "keys", lambda: T.Pad(1, keys=("image", "lable"))),
        (ValueError, "num_output_channels", lambda: TF.to_grayscale(a, 2)),
        (ValueError, "degrees", lambda: T.RandomRotation(-5)),
        (ValueError, "translate", lambda: T.RandomAffine(10, translate=(2, 0))),
        (ValueError, "scale", lambda: TF.affine(a, 0, (0, 0), -1.0, 0)),
        (ValueError, "interpolation", lambda: TF.rotate(a, 30, interpolation="cubic")),
        (ValueError, "value", lambda: T.RandomErasing(value="noise")),
        (ValueError, "value", lambda: T.RandomErasing(prob=1.0, value=(1, 2, 3))(images[1])),
        (ValueError, "prob", lambda: T.RandomPerspective(prob=2)),
        (ValueError, "size", lambda: T.RandomResizedCrop(0)),
        (ValueError, "order", lambda: T.Transpose((0, 0, 1))),
        (TypeError, "img", lambda: TF.hflip("not an image")),
        (ValueError, "fill", lambda: TF.rotate(a, 30, fill=(1, 2))),
    ]
    for exc, name, fn in bad:
        with pytest.raises(exc, match=name):
            fn()


def test_earlier_geometric_transforms_keep_the_input_kind(PT, images):
    a = images[0]
    p = Image.fromarray(a)
    for ours, ref in ((T.Resize((6, 9)), PT.Resize((6, 9))), (T.CenterCrop(5), PT.CenterCrop(5)),
                      (T.RandomCrop((13, 17)), PT.RandomCrop((13, 17))),
                      (T.RandomHorizontalFlip(prob=1.0), PT.RandomHorizontalFlip(prob=1.0))):
        out = ours(p)
        assert isinstance(out, Image.Image), ours
        np.testing.assert_array_equal(np.asarray(out), np.asarray(ref(p)), err_msg=repr(ours))
        assert isinstance(ours(a), np.ndarray)
    chw = jnp.asarray(a.transpose(2, 0, 1))
    out = T.Compose([T.RandomCrop(9, padding=1), T.RandomHorizontalFlip(), T.CenterCrop(5)])(chw)
    assert isinstance(out, type(chw)) and out.shape == (3, 5, 5)
