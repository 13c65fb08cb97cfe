"""pdx.vision.transforms against paddle.vision.transforms (PIL backend) and paddle's interpolate."""

import numpy as np
import pytest
from PIL import Image

from pdx.io import _worker
from pdx.vision import transforms as T


@pytest.fixture
def image(rng):
    return rng.integers(0, 256, size=(7, 9, 3)).astype(np.uint8)


@pytest.fixture
def PT(paddle):
    from paddle.vision import transforms

    return transforms


def test_to_tensor_matches_paddle(PT, image):
    for src in (image, Image.fromarray(image), Image.fromarray(image[..., 0])):
        ours = T.ToTensor()(src)
        ref = PT.ToTensor()(src).numpy()
        assert ours.dtype == np.float32 and ours.shape == ref.shape
        np.testing.assert_allclose(ours, ref, rtol=1e-6)
    assert T.ToTensor(data_format="HWC")(image).shape == (7, 9, 3)


def test_normalize_matches_paddle(PT, image):
    chw = T.ToTensor()(image)
    for kw in ({"mean": [0.4, 0.5, 0.6], "std": [0.2, 0.3, 0.25]}, {"mean": 0.5, "std": 0.5}):
        np.testing.assert_allclose(T.Normalize(**kw)(chw), PT.Normalize(**kw)(chw), rtol=1e-6)
    hwc = image.astype(np.float32)
    for rgb in (False, True):
        kw = {"mean": [1.0, 2.0, 3.0], "std": [4.0, 5.0, 6.0], "data_format": "HWC", "to_rgb": rgb}
        np.testing.assert_allclose(T.Normalize(**kw)(hwc), PT.Normalize(**kw)(hwc), rtol=1e-6)
    # to_rgb on CHW reverses the channel axis (Paddle's numpy path reverses the last axis, i.e. width)
    np.testing.assert_allclose(T.Normalize(to_rgb=True)(chw), chw[::-1], rtol=1e-6)
    with pytest.raises(ValueError, match="mean has 2 and std 2 values but the image"):
        T.Normalize(mean=[0.1, 0.2], std=[1.0, 1.0])(chw)


@pytest.mark.parametrize("size", [(4, 5), 5, (11, 13), 3])
def test_resize_pil_matches_paddle(PT, image, size):
    pil = Image.fromarray(image)
    np.testing.assert_array_equal(T.Resize(size)(pil), np.asarray(PT.Resize(size)(pil)))
    np.testing.assert_array_equal(T.Resize(size, interpolation="nearest")(pil),
                                  np.asarray(PT.Resize(size, interpolation="nearest")(pil)))


@pytest.mark.parametrize("out_hw", [(4, 5), (11, 13), (7, 4)])
def test_resize_numpy_matches_paddle_interpolate(paddle, rng, out_hw):
    img = rng.normal(size=(7, 9, 3)).astype(np.float32)
    x = paddle.to_tensor(img.transpose(2, 0, 1)[None])
    ref = paddle.nn.functional.interpolate(x, size=list(out_hw), mode="bilinear", align_corners=False, align_mode=0)
    np.testing.assert_allclose(T.Resize(out_hw)(img), ref.numpy()[0].transpose(1, 2, 0), rtol=1e-5, atol=1e-5)
    ref = paddle.nn.functional.interpolate(x, size=list(out_hw), mode="nearest")
    np.testing.assert_array_equal(T.Resize(out_hw, interpolation="nearest")(img), ref.numpy()[0].transpose(1, 2, 0))


def test_resize_int_keeps_aspect_and_rounds_integers(image):
    assert T.Resize(4)(image).shape == (4, 5, 3)  # shorter side 7 -> 4, longer int(4 * 9 / 7) = 5
    out = T.Resize((3, 4))(image)
    assert out.dtype == np.uint8
    ref = T.Resize((3, 4))(image.astype(np.float32))
    np.testing.assert_array_equal(out, np.clip(np.rint(ref), 0, 255).astype(np.uint8))


@pytest.mark.parametrize("size", [3, (4, 6), (6, 5), (7, 9)])
def test_center_crop_matches_paddle(PT, image, size):
    pil = Image.fromarray(image)
    np.testing.assert_array_equal(T.CenterCrop(size)(image), np.asarray(PT.CenterCrop(size)(pil)))
    np.testing.assert_array_equal(T.CenterCrop(size)(pil), np.asarray(PT.CenterCrop(size)(pil)))


@pytest.mark.parametrize("padding,mode,fill", [
    (2, "constant", 0), ((1, 3), "edge", 0), ((1, 2, 3, 4), "reflect", 0), (2, "symmetric", 0),
    (1, "constant", (10, 20, 30)),
])
def test_random_crop_padding_matches_paddle(PT, image, padding, mode, fill):
    pil = Image.fromarray(image)
    padded = np.asarray(PT.Pad(padding, fill=fill, padding_mode=mode)(pil))
    # a crop the size of the padded image has no random part: compare exactly
    crop = T.RandomCrop(padded.shape[:2], padding=padding, fill=fill, padding_mode=mode)
    np.testing.assert_array_equal(crop(image), padded)
    ref = PT.RandomCrop(padded.shape[:2], padding=padding, fill=fill, padding_mode=mode)(pil)
    np.testing.assert_array_equal(crop(pil), np.asarray(ref))


def test_random_crop_pad_if_needed_matches_paddle(PT, image):
    pil = Image.fromarray(image)
    ref = np.asarray(PT.RandomCrop((9, 13), pad_if_needed=True)(pil))  # 7x9 -> pads 2 rows/4 cols each side
    ours = T.RandomCrop((9, 13), pad_if_needed=True)
    scope = _worker._SampleScope(seed=0, epoch=0, dataset=None)
    crops = set()
    for i in range(40):
        scope.enter(i)
        out = ours(image)
        scope.leave()
        assert out.shape == (9, 13, 3)
        # every crop is a window of the padded image paddle builds (offsets are random in both)
        padded = np.pad(image, ((2, 2), (4, 4), (0, 0)))
        hits = [(t, l) for t in range(padded.shape[0] - 8) for l in range(padded.shape[1] - 12)
                if np.array_equal(padded[t:t + 9, l:l + 13], out)]
        assert hits
        crops.add(hits[0])
    assert len(crops) > 5 and ref.shape == (9, 13, 3)
    with pytest.raises(ValueError, match="pad_if_needed=True"):
        T.RandomCrop(20)(image)


def test_random_transforms_are_a_function_of_the_sample_key(image):
    t = T.Compose([T.RandomCrop(5, padding=2), T.RandomHorizontalFlip()])

    def run(seed, epoch, index):
        scope = _worker._SampleScope(seed, epoch, None)
        scope.enter(index)
        try:
            return t(image)
        finally:
            scope.leave()

    np.testing.assert_array_equal(run(1, 0, 3), run(1, 0, 3))
    outs = [run(1, 0, i) for i in range(12)]
    assert len({o.tobytes() for o in outs}) > 6
    assert any(not np.array_equal(run(1, 0, i), run(2, 0, i)) for i in range(5))
    assert any(not np.array_equal(run(1, 0, i), run(1, 1, i)) for i in range(5))


def test_horizontal_flip_matches_paddle_at_prob_1_and_flips_half(PT, image):
    np.testing.assert_array_equal(T.RandomHorizontalFlip(prob=1.0)(image),
                                  np.asarray(PT.RandomHorizontalFlip(prob=1.0)(Image.fromarray(image))))
    np.testing.assert_array_equal(T.RandomHorizontalFlip(prob=0.0)(image), image)
    flip = T.RandomHorizontalFlip()
    scope = _worker._SampleScope(seed=3, epoch=0, dataset=None)
    flipped = 0
    for i in range(400):
        scope.enter(i)
        flipped += not np.array_equal(flip(image), image)
        scope.leave()
    assert 160 < flipped < 240
    with pytest.raises(ValueError, match=r"prob\) must be in \[0, 1\]; got prob=2"):
        T.RandomHorizontalFlip(prob=2)


def test_compose_tuple_keys_and_errors(image):
    t = T.Compose([T.CenterCrop(4), T.ToTensor()])
    img, label = T.ToTensor(keys=("image", "label"))((image, 5))
    assert img.shape == (3, 7, 9) and label == 5
    assert t(image).shape == (3, 4, 4)
    with pytest.raises(TypeError, match=r"transforms\[1\] is a int, not callable"):
        T.Compose([T.ToTensor(), 3])
    with pytest.raises(TypeError, match="PIL image or a numpy array of shape"):
        T.CenterCrop(2)(np.zeros((2, 2, 2, 2)))
    with pytest.raises(ValueError, match="CenterCrop size"):
        T.CenterCrop(10)(image)
