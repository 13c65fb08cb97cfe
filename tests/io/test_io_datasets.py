"""pdx.io datasets and default collate, against installed paddle."""

import numpy as np
import pytest

from pdx import io


def test_tensor_dataset_matches_paddle(paddle, rng):
    x = rng.normal(size=(6, 3)).astype(np.float32)
    y = rng.integers(0, 5, size=6)
    ours = io.TensorDataset([x, y])
    ref = paddle.io.TensorDataset([paddle.to_tensor(x), paddle.to_tensor(y)])
    assert len(ours) == len(ref) == 6
    for i in range(6):
        for a, b in zip(ours[i], ref[i]):
            np.testing.assert_array_equal(a, b.numpy())


def test_tensor_dataset_accepts_jax_and_rejects_ragged():
    import jax.numpy as jnp

    ds = io.TensorDataset([jnp.arange(4)])
    assert isinstance(ds.tensors[0], np.ndarray)  # workers never see jax arrays
    with pytest.raises(ValueError, match=r"same first dimension; got shapes \[\(4,\), \(3,\)\]"):
        io.TensorDataset([np.zeros(4), np.zeros(3)])


def test_compose_concat_chain_match_paddle(paddle):
    a = np.arange(5)
    b = np.arange(5) * 10.0
    ours = io.ComposeDataset([io.TensorDataset([a]), io.TensorDataset([b, a + 1])])
    ref = paddle.io.ComposeDataset([paddle.io.TensorDataset([paddle.to_tensor(a)]),
                                    paddle.io.TensorDataset([paddle.to_tensor(b), paddle.to_tensor(a + 1)])])
    for i in range(5):
        assert [float(v) for v in ours[i]] == [float(v.numpy()) for v in ref[i]]

    cat = io.ConcatDataset([io.TensorDataset([a]), io.TensorDataset([a + 100])])
    ref_cat = paddle.io.ConcatDataset([paddle.io.TensorDataset([paddle.to_tensor(a)]),
                                       paddle.io.TensorDataset([paddle.to_tensor(a + 100)])])
    assert [int(cat[i][0]) for i in range(-10, 10)] == [int(ref_cat[i][0].numpy()) for i in range(-10, 10)]

    class Ours(io.IterableDataset):
        def __init__(self, n): self.n = n
        def __iter__(self): return iter(range(self.n))

    class Ref(paddle.io.IterableDataset):
        def __init__(self, n): self.n = n
        def __iter__(self): return iter(range(self.n))

    assert list(io.ChainDataset([Ours(2), Ours(3)])) == [x for x in paddle.io.ChainDataset([Ref(2), Ref(3)])]
    with pytest.raises(ValueError, match=r"same length; got lengths \[5, 4\]"):
        io.ComposeDataset([io.TensorDataset([a]), io.TensorDataset([a[:4]])])


@pytest.mark.parametrize("lengths", [[0.5, 0.3, 0.2], [0.34, 0.33, 0.33], [4, 3, 3]])
def test_random_split_sizes_match_paddle_and_partition(paddle, lengths):
    base = io.TensorDataset([np.arange(10)])
    ours = io.random_split(base, lengths, generator=3)
    ref = paddle.io.random_split(paddle.io.TensorDataset([paddle.to_tensor(np.arange(10))]), lengths)
    assert [len(s) for s in ours] == [len(s) for s in ref]
    all_indices = sum((s.indices for s in ours), [])
    assert sorted(all_indices) == list(range(10))
    again = io.random_split(base, lengths, generator=3)
    assert [s.indices for s in again] == [s.indices for s in ours]
    assert int(ours[0][0][0]) == ours[0].indices[0]


def test_random_split_bad_lengths():
    with pytest.raises(ValueError, match="summing to len"):
        io.random_split(io.TensorDataset([np.arange(10)]), [3, 3])


def test_default_collate_matches_paddle(paddle):
    from paddle.io.dataloader.collate import default_collate_fn as ref

    batch = [{"image": np.full((2, 3), i, np.float32), "label": i, "name": f"s{i}",
              "pair": (np.int64(i), np.array([i, i + 1]))} for i in range(4)]
    ours, theirs = io.default_collate_fn(batch), ref(batch)
    assert ours.keys() == theirs.keys()
    np.testing.assert_array_equal(ours["image"], theirs["image"])
    np.testing.assert_array_equal(ours["label"], theirs["label"])
    assert ours["name"] == theirs["name"]
    assert isinstance(ours["pair"], list) and isinstance(theirs["pair"], list)
    for a, b in zip(ours["pair"], theirs["pair"]):
        np.testing.assert_array_equal(a, b)


def test_default_collate_errors():
    with pytest.raises(ValueError, match="different numbers of fields"):
        io.default_collate_fn([(1, 2), (1,)])
    with pytest.raises(TypeError, match="Pass collate_fn="):
        io.default_collate_fn([object()])
