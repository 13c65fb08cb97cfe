"""WeightedRandomSampler and SubsetRandomSampler against paddle 3.3.1:
weighted draws are numpy's, so after np.random.seed they equal Paddle's;
the subset order comes from a different generator, so it is compared as a set."""

import numpy as np
import pytest

from pdx import io


def test_weighted_and_subset_samplers_match_paddle(paddle, rng):
    weights = rng.uniform(0, 1, 10)
    weights[[2, 5]] = 0.0
    for args in ((weights, 20, True), (weights.tolist(), 5, False), (paddle.to_tensor(weights), 7, True)):
        kw = dict(num_samples=args[1], replacement=args[2])
        np.random.seed(3)
        ref = list(paddle.io.WeightedRandomSampler(np.asarray(args[0]), **kw))  # paddle takes lists but cannot len() them
        np.random.seed(3)
        sampler = io.WeightedRandomSampler(args[0], **kw)
        assert list(sampler) == ref and len(sampler) == len(ref) == args[1]
        assert not {2, 5} & set(ref)
    # 2-D weights: Paddle divides each row by the wrong sums (a broadcasting slip) and fails; pdx draws per row
    rows = rng.uniform(0.1, 1, (3, 4))
    drawn = list(io.WeightedRandomSampler(rows, 5))
    assert len(drawn) == len(io.WeightedRandomSampler(rows, 5)) == 15 and set(drawn) <= set(range(4))
    indices = [9, 3, 4, 11, 0]
    ref, got = list(paddle.io.SubsetRandomSampler(indices)), list(io.SubsetRandomSampler(indices))
    assert sorted(got) == sorted(ref) == sorted(indices) and len(io.SubsetRandomSampler(indices)) == 5
    loader = io.DataLoader(io.TensorDataset([np.arange(12.0)]), batch_sampler=io.BatchSampler(
        sampler=io.SubsetRandomSampler(indices), batch_size=2))
    assert sorted(int(v) for batch in loader for v in np.asarray(batch[0]).ravel()) == sorted(indices)
    with pytest.raises(ValueError, match="num_samples"):
        io.WeightedRandomSampler(weights, 0)
    with pytest.raises(ValueError, match="replacement=False"):
        io.WeightedRandomSampler([1.0, 0.0], 2, replacement=False)
    with pytest.raises(ValueError, match="greater than 0"):
        io.SubsetRandomSampler([])
