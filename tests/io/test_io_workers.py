"""pdx.io.DataLoader with real worker processes (each test starts and stops its own)."""

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from io_testutil import AugmentedImages, DiesAt, FailsAt, ShardedRange, WhoLoads, mark_worker

from pdx import io


def _numpy(loader_or_iter):
    return [[np.asarray(t) for t in batch] for batch in loader_or_iter]


def test_two_workers_give_the_main_process_batches_and_run_in_workers():
    # one set of workers for both checks: augmented images (compared with the main
    # process) zipped with who loaded each sample
    def make(workers):
        ds = io.ComposeDataset([AugmentedImages(16), WhoLoads()])
        return io.DataLoader(ds, batch_size=2, shuffle=True, seed=21, num_workers=workers,
                             persistent_workers=True, worker_init_fn=mark_worker)

    main, workers = make(0), make(2)
    epoch_seeds = []
    for epoch in range(2):  # the second epoch reuses the persistent workers
        want, got = _numpy(main), _numpy(workers)
        assert len(got) == len(want) == 8
        for g, w in zip(got, want):
            for a, b in zip(g[:3], w[:3]):  # image, index, index again
                np.testing.assert_array_equal(a, b)
        pids, ids, marks, seeds = (np.concatenate([b[i] for b in got]) for i in (3, 4, 5, 6))
        assert os.getpid() not in set(pids.tolist()) and len(set(pids.tolist())) == 2
        assert ids.tolist() == [0, 0, 1, 1] * 4  # batch b is loaded by worker b % 2
        assert marks.tolist() == ids.tolist()
        assert len(set(seeds.tolist())) == 1  # both workers report the epoch's base seed
        epoch_seeds.append(int(seeds[0]))
        main_marks = np.concatenate([b[5] for b in want]).tolist()
        assert main_marks == [-1] * 16  # no workers: worker_init_fn does not run, as in Paddle
    assert epoch_seeds[0] != epoch_seeds[1]
    assert io.get_worker_info() is None
    del workers  # stops the persistent workers


def test_failing_worker_names_worker_and_sample_quickly():
    loader = io.DataLoader(FailsAt(13), batch_size=4, num_workers=2)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker 1 \(pid \d+\) failed loading sample index 13 "
                                           r"\(epoch 0, batch 3\): ValueError: corrupt record 13"):
        for _ in loader:
            pass
    assert time.monotonic() - start < 120  # a hang guard, not a speed test: worker start-up dominates


def test_dying_worker_is_reported_with_its_batch():
    loader = io.DataLoader(DiesAt(9), batch_size=4, num_workers=2)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker 0 failed while loading sample index 9 "
                                           r"\(epoch 0, batch 2\): .*exit code 3"):
        for _ in loader:
            pass
    assert time.monotonic() - start < 120  # a hang guard, not a speed test


def test_iterable_dataset_split_with_get_worker_info():
    loader = io.DataLoader(ShardedRange(10), batch_size=2, num_workers=2)
    batches = _numpy(loader)
    values = np.concatenate([b[0] for b in batches]).tolist()
    assert sorted(values) == list(range(10))
    assert [b[1].tolist() for b in batches[:2]] == [[0, 0], [1, 1]]  # round-robin over the workers
    draws = np.concatenate([b[2] for b in batches]).tolist()
    assert len(set(draws)) == 10  # workers' i-th samples get different random streams


_RESUME_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, {testdir!r})
    from io_testutil import AugmentedImages
    from pdx import io

    if __name__ == "__main__":  # workers import this module: the script must not re-run
        state = json.loads(sys.argv[1])
        loader = io.DataLoader(AugmentedImages(), batch_size=5, shuffle=True, num_workers=2)  # seed from state
        it = iter(loader)
        it.set_state(state)
        rest = [[np.asarray(t) for t in b] for b in it]
        np.savez(sys.argv[2], **{{f"b{{i}}_{{j}}": a for i, b in enumerate(rest) for j, a in enumerate(b)}})
""")


def test_state_restored_in_a_new_process_gives_the_remaining_batches(tmp_path):
    loader = io.DataLoader(AugmentedImages(), batch_size=5, shuffle=True, seed=4)
    it = iter(loader)
    seen = [next(it) for _ in range(2)]
    state = it.get_state()
    remaining = _numpy(it)
    assert len(seen) + len(remaining) == 5

    script = tmp_path / "resume.py"
    script.write_text(_RESUME_SCRIPT.format(testdir=os.path.dirname(__file__)))
    out = tmp_path / "rest.npz"
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, str(script), json.dumps(state), str(out)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = np.load(out)
    assert len(got.files) == 2 * len(remaining)
    for i, batch in enumerate(remaining):
        for j, want in enumerate(batch):
            np.testing.assert_array_equal(got[f"b{i}_{j}"], want)
