"""pdx.io samplers against installed paddle's (exact index sequences)."""

import itertools

import numpy as np
import pytest

from pdx import io


def test_sequence_and_batch_sampler_match_paddle(paddle):
    data = list(range(11))
    assert list(io.SequenceSampler(data)) == list(paddle.io.SequenceSampler(data))
    for bs, drop in itertools.product([1, 3, 4, 11, 12], [False, True]):
        ours = io.BatchSampler(data, batch_size=bs, drop_last=drop)
        ref = paddle.io.BatchSampler(data, batch_size=bs, drop_last=drop)
        assert list(ours) == list(ref) and len(ours) == len(ref), (bs, drop)


@pytest.mark.parametrize("replacement,num_samples", [(False, None), (False, 5), (True, 20)])
def test_random_sampler_matches_paddle_under_numpy_seed(paddle, replacement, num_samples):
    data = list(range(12))
    np.random.seed(7)
    ref = list(paddle.io.RandomSampler(data, replacement=replacement, num_samples=num_samples))
    np.random.seed(7)
    ours_global = list(io.RandomSampler(data, replacement=replacement, num_samples=num_samples))
    ours_seeded = list(io.RandomSampler(data, replacement=replacement, num_samples=num_samples, generator=7))
    assert ours_global == ref
    assert ours_seeded == ref  # an int seed is epoch 0 of RandomState(seed + epoch)


def test_random_sampler_int_seed_is_a_function_of_epoch():
    s = io.RandomSampler(list(range(20)), generator=5)
    first = list(s)
    assert list(s) == first  # same epoch, same order
    s.set_epoch(1)
    second = list(s)
    assert second != first and sorted(second) == list(range(20))
    assert second == np.random.RandomState(6).permutation(20).tolist()
    assert s.epoch_deterministic and not io.RandomSampler(list(range(3))).epoch_deterministic


def test_random_sampler_errors():
    with pytest.raises(ValueError, match="needs replacement=True"):
        io.RandomSampler(list(range(3)), num_samples=5)
    with pytest.raises(TypeError, match="replacement"):
        io.RandomSampler(list(range(3)), replacement=1)


@pytest.mark.parametrize("n,bs,nranks,shuffle,drop", [
    (10, 2, 2, False, False), (10, 3, 3, True, False), (17, 4, 2, True, True), (5, 2, 4, True, False),
    (2, 1, 4, False, False),
])
def test_distributed_batch_sampler_matches_paddle(paddle, n, bs, nranks, shuffle, drop):
    data = list(range(n))
    for rank in range(nranks):
        ours = io.DistributedBatchSampler(data, bs, num_replicas=nranks, rank=rank, shuffle=shuffle, drop_last=drop)
        ref = paddle.io.DistributedBatchSampler(data, bs, num_replicas=nranks, rank=rank, shuffle=shuffle,
                                                drop_last=drop)
        assert len(ours) == len(ref)
        for epoch in (0, 3):
            ours.set_epoch(epoch)
            ref.set_epoch(epoch)
            assert list(ours) == list(ref), (rank, epoch)


def test_distributed_batch_sampler_ranks_partition_an_epoch():
    data = list(range(16))
    seen = []
    for rank in range(4):
        s = io.DistributedBatchSampler(data, 2, num_replicas=4, rank=rank, shuffle=True)
        s.set_epoch(2)
        seen += sum(list(s), [])
    assert sorted(seen) == data


def test_distributed_batch_sampler_defaults_to_jax_processes():
    import jax

    s = io.DistributedBatchSampler(list(range(6)), 2)
    assert (s.nranks, s.local_rank) == (jax.process_count(), jax.process_index())
    with pytest.raises(ValueError, match=r"rank\) must be an int in \[0, num_replicas=2\); got rank=2"):
        io.DistributedBatchSampler(list(range(6)), 2, num_replicas=2, rank=2)
