"""pdx.vision.datasets: Digits against scikit-learn, folders against paddle.vision.datasets."""

import os

import numpy as np
import pytest
from PIL import Image

from pdx.io import DataLoader
from pdx.vision import datasets, transforms


def test_digits_splits_are_disjoint_and_cover_sklearn():
    from sklearn.datasets import load_digits

    images, labels = load_digits(return_X_y=True)
    train, test = datasets.Digits(mode="train"), datasets.Digits(mode="test")
    assert (len(train), len(test)) == (1438, 359)
    assert len(train) + len(test) == len(images)
    ours = np.concatenate([train.images, test.images]).reshape(len(images), 64).astype(np.float64)
    ours_labels = np.concatenate([train.labels, test.labels]).ravel()
    # every sklearn image appears exactly once, with its label, scaled 0..16 -> 0..255
    scaled = np.rint(images * 255 / 16)
    order = np.lexsort(scaled.T)
    ours_order = np.lexsort(ours.T)
    np.testing.assert_array_equal(ours[ours_order], scaled[order])
    np.testing.assert_array_equal(ours_labels[ours_order], labels[order])
    img, label = test[0]
    assert img.shape == (8, 8, 1) and img.dtype == np.uint8 and label.dtype == np.int64 and label.shape == (1,)
    again = datasets.Digits(mode="test")
    np.testing.assert_array_equal(again.images, test.images)  # the split is fixed


def test_digits_transform_and_loader():
    ds = datasets.Digits(mode="test", transform=transforms.Compose([transforms.ToTensor(),
                                                                     transforms.Normalize(0.5, 0.5)]))
    x, y = next(iter(DataLoader(ds, batch_size=32)))
    assert x.shape == (32, 1, 8, 8) and y.shape == (32, 1)
    assert float(x.min()) >= -1.0 and float(x.max()) <= 1.0
    with pytest.raises(ValueError, match="mode\\) must be 'train' or 'test'; got mode='val'"):
        datasets.Digits(mode="val")


@pytest.fixture
def image_tree(tmp_path, rng):
    for cls, n in (("dog", 2), ("cat", 3)):
        os.makedirs(tmp_path / cls / "nested")
        for i in range(n):
            arr = rng.integers(0, 256, size=(5, 6, 3)).astype(np.uint8)
            Image.fromarray(arr).save(tmp_path / cls / f"{i}.png")
        Image.fromarray(arr).save(tmp_path / cls / "nested" / "x.PNG")
        (tmp_path / cls / "notes.txt").write_text("not an image")
    return tmp_path


def test_dataset_folder_matches_paddle(paddle, image_tree):
    from paddle.vision.datasets import DatasetFolder as Ref

    ours, ref = datasets.DatasetFolder(str(image_tree)), Ref(str(image_tree))
    assert ours.classes == ref.classes == ["cat", "dog"]
    assert ours.samples == ref.samples and ours.targets == ref.targets
    for i in range(len(ref)):
        (a, ta), (b, tb) = ours[i], ref[i]
        assert ta == tb
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_image_folder_matches_paddle(paddle, image_tree):
    from paddle.vision.datasets import ImageFolder as Ref

    tf = transforms.ToTensor()
    ours, ref = datasets.ImageFolder(str(image_tree), transform=tf), Ref(str(image_tree))
    assert ours.samples == ref.samples and len(ours) == 7
    np.testing.assert_allclose(ours[3][0], tf(ref[3][0]), rtol=1e-6)


def test_folder_npy_files_and_filters(tmp_path):
    os.makedirs(tmp_path / "a")
    os.makedirs(tmp_path / "b")
    np.save(tmp_path / "a" / "0.npy", np.full((4, 4, 3), 7, np.uint8))
    np.save(tmp_path / "b" / "1.npy", np.full((4, 4, 3), 9, np.uint8))
    ds = datasets.DatasetFolder(str(tmp_path), transform=transforms.ToTensor())
    x, y = next(iter(DataLoader(ds, batch_size=2)))
    assert y.tolist() == [0, 1] and np.allclose(np.asarray(x)[1], 9 / 255)
    only_b = datasets.DatasetFolder(str(tmp_path), is_valid_file=lambda p: "1.npy" in p)
    assert [t for _, t in only_b.samples] == [1]
    with pytest.raises(ValueError, match="extensions= or is_valid_file=, not both"):
        datasets.ImageFolder(str(tmp_path), extensions=(".npy",), is_valid_file=lambda p: True)
    with pytest.raises(RuntimeError, match="found no files"):
        datasets.ImageFolder(str(tmp_path), extensions=(".png",))
    with pytest.raises(ValueError, match="existing directory"):
        datasets.DatasetFolder(str(tmp_path / "missing"))


def test_npy_loader_refuses_pickled_objects(tmp_path):
    os.makedirs(tmp_path / "c")
    np.save(tmp_path / "c" / "evil.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    ds = datasets.DatasetFolder(str(tmp_path))
    with pytest.raises(ValueError, match="allow_pickle"):
        ds[0]
