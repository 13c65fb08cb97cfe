"""pdx.io.DataLoader in the main process (num_workers=0): batching, order, state, placement."""

import json

import jax
import numpy as np
import pytest
from io_testutil import AugmentedImages, FailsAt, ShardedRange

from pdx import io


def _xy(n=10):
    return np.arange(n * 2, dtype=np.float32).reshape(n, 2), np.arange(n, dtype=np.int64)


def _labels(loader):
    return [np.asarray(b[1]).tolist() for b in loader]


def test_batches_are_jax_arrays_in_order():
    x, y = _xy()
    batches = list(io.DataLoader(io.TensorDataset([x, y]), batch_size=4))
    assert [len(b[1]) for b in batches] == [4, 4, 2]
    assert all(isinstance(t, jax.Array) for b in batches for t in b)
    np.testing.assert_array_equal(np.concatenate([np.asarray(b[0]) for b in batches]), x)
    assert isinstance(batches[0], list)  # Paddle's default collate returns a list of fields


def test_drop_last_and_len():
    x, y = _xy()
    loader = io.DataLoader(io.TensorDataset([x, y]), batch_size=4, drop_last=True)
    assert len(loader) == 2 and _labels(loader) == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_shuffle_is_the_seeded_permutation_per_epoch():
    x, y = _xy(12)
    loader = io.DataLoader(io.TensorDataset([x, y]), batch_size=5, shuffle=True, seed=11)
    for epoch in range(2):
        flat = sum(_labels(loader), [])
        assert flat == np.random.RandomState(11 + epoch).permutation(12).tolist()
    again = io.DataLoader(io.TensorDataset([x, y]), batch_size=5, shuffle=True, seed=11)
    assert sum(_labels(again), []) == np.random.RandomState(11).permutation(12).tolist()


def test_default_seed_follows_pdx_seed():
    import pdx

    x, y = _xy(12)
    pdx.seed(3)
    a = _labels(io.DataLoader(io.TensorDataset([x, y]), batch_size=4, shuffle=True))
    pdx.seed(3)
    b = _labels(io.DataLoader(io.TensorDataset([x, y]), batch_size=4, shuffle=True))
    c = _labels(io.DataLoader(io.TensorDataset([x, y]), batch_size=4, shuffle=True))
    assert a == b and c != b  # the second loader after a seed gets a fresh stream
    # building a loader leaves pdx's generator alone: later weights do not change
    pdx.seed(5)
    w1 = np.asarray(pdx.rand([4]))
    pdx.seed(5)
    io.DataLoader(io.TensorDataset([x, y]), shuffle=True)
    np.testing.assert_array_equal(np.asarray(pdx.rand([4])), w1)


def test_batch_size_none_yields_samples_unbatched():
    x, y = _xy(3)
    out = list(io.DataLoader(io.TensorDataset([x, y]), batch_size=None))
    assert len(out) == 3 and out[1][0].shape == (2,) and int(out[2][1]) == 2


def test_dict_samples_and_custom_collate():
    class D(io.Dataset):
        def __getitem__(self, i):
            return {"x": np.full((2,), i, np.float32), "id": i}

        def __len__(self):
            return 5

    batch = next(iter(io.DataLoader(D(), batch_size=3)))
    assert set(batch) == {"x", "id"} and batch["x"].shape == (3, 2)
    summed = list(io.DataLoader(D(), batch_size=2, collate_fn=lambda s: np.float32(sum(d["id"] for d in s))))
    assert [float(b) for b in summed] == [1.0, 5.0, 4.0]


def test_random_transforms_depend_on_seed_and_index_only():
    a = [np.asarray(b[0]) for b in io.DataLoader(AugmentedImages(), batch_size=8, seed=5)]
    b = [np.asarray(b[0]) for b in io.DataLoader(AugmentedImages(), batch_size=8, seed=5, use_buffer_reader=False)]
    c = [np.asarray(b[0]) for b in io.DataLoader(AugmentedImages(), batch_size=8, seed=6)]
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert any(not np.array_equal(u, v) for u, v in zip(a, c))
    # sample 3's augmentation is the same whichever batch it lands in
    shuffled = io.DataLoader(AugmentedImages(), batch_size=8, seed=5, shuffle=True)
    images, indices = (np.asarray(t) for t in next(iter(shuffled)))
    assert indices.tolist() != list(range(8))
    for pos, idx in enumerate(indices.tolist()):
        np.testing.assert_array_equal(images[pos], a[idx // 8][idx % 8])


def test_state_resumes_exactly_mid_epoch_and_across_epochs():
    def make():
        return io.DataLoader(AugmentedImages(), batch_size=5, shuffle=True, seed=9)

    ref_loader = make()
    full = [[np.asarray(t) for t in b] for _ in range(2) for b in ref_loader]  # 2 epochs x 5 batches

    loader = make()
    it = iter(loader)
    for _ in range(3):
        next(it)
    state = json.loads(json.dumps(it.get_state()))  # JSON round trip, as a checkpoint would store it
    assert state["epoch"] == 0 and state["batch"] == 3

    resumed = make()
    it2 = iter(resumed)
    it2.set_state(state)
    rest = [[np.asarray(t) for t in b] for b in it2] + [[np.asarray(t) for t in b] for b in resumed]
    assert len(rest) == len(full) - 3
    for got, want in zip(rest, full[3:]):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)

    # state_dict / set_state_dict on the loader, at an epoch boundary
    boundary = make()
    list(boundary)
    sd = boundary.state_dict()
    assert (sd["epoch"], sd["batch"]) == (1, 0)
    fresh = make()
    fresh.set_state_dict(sd)
    np.testing.assert_array_equal(np.asarray(next(iter(fresh))[0]), full[5][0])


def test_state_from_another_loader_shape_is_rejected():
    x, y = _xy(10)
    state = io.DataLoader(io.TensorDataset([x, y]), batch_size=5).state_dict()
    other = io.DataLoader(io.TensorDataset([x, y]), batch_size=2)
    with pytest.raises(ValueError, match="2 batches per epoch, this loader has 5"):
        other.set_state_dict(state)


def test_places_sharding_splits_the_batch_over_devices():
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(jax.devices()[:8]), ("data",))
    x, y = _xy(16)
    loader = io.DataLoader(io.TensorDataset([x, y]), batch_size=8, places=NamedSharding(mesh, PartitionSpec("data")))
    bx, by = next(iter(loader))
    assert bx.sharding.spec == PartitionSpec("data") and len(bx.addressable_shards) == 8
    np.testing.assert_array_equal(np.asarray(bx), x[:8])


def test_distributed_batch_sampler_in_loader():
    x, y = _xy(10)
    ds = io.TensorDataset([x, y])
    shards = [_labels(io.DataLoader(ds, batch_sampler=io.DistributedBatchSampler(ds, 2, num_replicas=2, rank=r)))
              for r in range(2)]
    assert sorted(sum(sum(shards, []), [])) == list(range(10))
    assert shards[0][0] == [0, 1] and shards[1][0] == [2, 3]


def test_iterable_dataset_batches_and_resume():
    loader = io.DataLoader(ShardedRange(7), batch_size=3)
    assert [np.asarray(b[0]).tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]]
    loader = io.DataLoader(ShardedRange(7), batch_size=3, drop_last=True)
    it = iter(loader)
    next(it)
    state = it.get_state()
    it2 = iter(io.DataLoader(ShardedRange(7), batch_size=3, drop_last=True))
    it2.set_state(state)
    assert [np.asarray(b[0]).tolist() for b in it2] == [[3, 4, 5]]


def test_error_in_main_process_names_sample():
    it = iter(io.DataLoader(FailsAt(13), batch_size=4))
    with pytest.raises(RuntimeError, match=r"main process \(num_workers=0\) failed loading sample index 13 "
                                           r"\(epoch 0, batch 3\): ValueError: corrupt record 13"):
        list(it)
    assert list(it) == []  # the failed epoch is over


def test_bad_arguments_name_the_argument():
    x, y = _xy()
    ds = io.TensorDataset([x, y])
    with pytest.raises(ValueError, match=r"num_workers\) must be an int >= 0; got num_workers=-1"):
        io.DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match=r"batch_size\) must be a positive int or None; got batch_size=0"):
        io.DataLoader(ds, batch_size=0)
    with pytest.raises(ValueError, match="leave batch_size=1"):
        io.DataLoader(ds, batch_sampler=io.BatchSampler(ds, batch_size=2), batch_size=4)
    with pytest.raises(ValueError, match="shuffle inside the dataset"):
        io.DataLoader(ShardedRange(3), shuffle=True)
    with pytest.raises(TypeError, match="map-style dataset"):
        io.DataLoader(42)


def test_batch_sampler_on_numpy_global_rng_matches_paddle_order(paddle):
    x, y = _xy(10)
    np.random.seed(1)
    ref = list(paddle.io.BatchSampler(list(range(10)), shuffle=True, batch_size=4))
    np.random.seed(1)
    ds = io.TensorDataset([x, y])
    got = _labels(io.DataLoader(ds, batch_sampler=io.BatchSampler(ds, shuffle=True, batch_size=4)))
    assert got == ref  # the order was drawn once, in the main process, from numpy's global generator
