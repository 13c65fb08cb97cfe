"""A DataLoader worker imports what loading needs (pdx's core, pdx.io, grain), not pdx's subpackages."""

import json
import os

from io_import_probe import NOT_IN_WORKERS, ModulesLoaded

from pdx import io


def test_workers_do_not_import_unused_subpackages():
    samples = [json.loads(s) for batch in io.DataLoader(ModulesLoaded(), batch_size=2, num_workers=2, seed=0)
               for s in batch]
    assert {s["pid"] for s in samples}.isdisjoint({os.getpid()})  # made in worker processes
    assert [s["loaded"] for s in samples] == [[]] * 4, f"workers imported some of {NOT_IN_WORKERS}"
