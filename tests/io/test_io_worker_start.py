"""How DataLoader workers start: forks of one server that imported grain and JAX once, with no JAX backend."""

import json
import os
import subprocess
import sys
import textwrap
from multiprocessing import forkserver

import numpy as np

from io_testutil import ForkInfo

from pdx import io


def test_workers_are_forks_of_a_server_started_with_the_loader():
    loader = io.DataLoader(ForkInfo(), batch_size=2, num_workers=2, seed=0)
    server = forkserver._forkserver._forkserver_pid
    assert server is not None  # started when the loader was built, before iter(loader)
    samples = [json.loads(s) for batch in loader for s in batch]
    assert len({s["pid"] for s in samples}) == 2 and os.getpid() not in {s["pid"] for s in samples}
    assert {s["parent"] for s in samples} == {server}
    assert not any(s["backend"] for s in samples)  # the server never started XLA, so forking it is safe
    # a worker that made its last batch notices the stop signal quickly, so
    # an epoch's end does not wait for grain's 0.5 s poll
    assert {s["poll"] for s in samples} == {0.01}
    # the server froze what it imported (JAX, grain, pdx): a worker's collections skip it
    assert min(s["frozen"] for s in samples) > 50_000, samples
    from pdx.io import _frozen_heap
    assert not _frozen_heap.frozen  # imported anywhere but the server, it leaves the heap alone
    again = [json.loads(s) for batch in io.DataLoader(ForkInfo(), batch_size=2, num_workers=2) for s in batch]
    assert {s["parent"] for s in again} == {server}  # a later loader reuses the server


_JAX_AT_IMPORT_SCRIPT = textwrap.dedent("""
    import os
    import sys
    import jax.numpy as jnp
    import numpy as np
    sys.path.insert(0, {testdir!r})
    from io_testutil import AugmentedImages
    from pdx import io

    IMPORTED_BY = os.getpid()
    ONE = float(jnp.ones(()))  # a JAX backend at import: in this process and in each worker that imports it


    class WhoImportedMain(io.Dataset):
        def __getitem__(self, idx):
            return np.int64(sys.modules["__mp_main__"].IMPORTED_BY == os.getpid())

        def __len__(self):
            return 4


    if __name__ == "__main__":
        def batches(workers):
            return [np.asarray(x) for x, _ in io.DataLoader(AugmentedImages(), batch_size=5, shuffle=True,
                                                              num_workers=workers, seed=3)]
        got, want = batches(2), batches(0)
        assert len(got) == len(want) == 5 and all(np.array_equal(a, b) for a, b in zip(got, want))
        own = np.concatenate([np.asarray(b) for b in io.DataLoader(WhoImportedMain(), batch_size=2, num_workers=2)])
        assert own.tolist() == [1, 1, 1, 1], "a worker inherited the main module instead of importing it"
        print("same batches")
""")


def test_main_module_that_starts_jax_at_import_still_gets_workers(tmp_path):
    # The server must not import the main module (multiprocessing's default
    # for forkserver): a backend started there would be forked into workers.
    # Each worker imports it itself, as a spawned worker would.
    script = tmp_path / "jax_at_import.py"
    script.write_text(_JAX_AT_IMPORT_SCRIPT.format(testdir=os.path.dirname(__file__)))
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "same batches" in proc.stdout


def test_workers_get_the_dataset_as_it_is_when_each_epoch_starts(tmp_path, monkeypatch):
    """Workers read the dataset from a file written once per epoch: a change between epochs reaches
    them (as with torch's per-epoch workers); the next epoch rewrites the same file, which goes
    with the process's pool of them."""
    import tempfile

    from io_testutil import Shifted

    from pdx.io import _pipeline

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(_pipeline, "_FILES", [])  # a pool of this test's own, under tmp_path
    data = Shifted(12)
    loader = io.DataLoader(data, batch_size=4, num_workers=2)
    it = iter(loader)
    first = [int(v) for v in np.asarray(next(it))]
    assert len(list(tmp_path.glob("pdx-dataset-*/*"))) == 1  # one file for both workers
    first = sorted(first + [int(v) for batch in it for v in np.asarray(batch)])
    del it
    import gc

    gc.collect()  # the first epoch's stream closes: its file goes back to the pool
    data.shift = 100
    second = sorted(int(v) for batch in loader for v in np.asarray(batch))
    assert first == list(range(12)) and second == list(range(100, 112))
    assert len(list(tmp_path.glob("pdx-dataset-*/*"))) == 1  # rewritten, not a second file
    _pipeline._FILES.clear()
    gc.collect()
    assert not list(tmp_path.glob("pdx-dataset-*"))  # the pool's directory goes with the pool


def test_workers_map_large_arrays_copy_on_write():
    """Large arrays reach workers as views of the mapped file: right values, writable, and a
    worker's writes stay its own (the next epoch starts from the main process's array)."""
    from io_testutil import Scribbled

    data = Scribbled(16)
    want = sorted(float(data.rows[i].sum() + 4096 * 1000.0) for i in range(16))
    loader = io.DataLoader(data, batch_size=4, num_workers=2)
    for _ in range(2):
        assert sorted(float(v) for batch in loader for v in np.asarray(batch)) == want
    assert data.rows[0, 0] == 0.0  # the main process's array is untouched
