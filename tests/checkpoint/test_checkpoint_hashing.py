"""The sha256 pass of restore: chunked reads hash every byte, and a flipped byte anywhere in a
multi-chunk data file fails the restore, naming that file."""

import hashlib
import os

import numpy as np
import pytest

from pdx.checkpoint import CheckpointCorruptError, CheckpointManager, _manifest


@pytest.mark.parametrize("size", [0, 1, _manifest._CHUNK - 1, _manifest._CHUNK, _manifest._CHUNK + 1,
                                  2 * _manifest._CHUNK + 3])
def test_sha256_matches_hashlib_across_chunk_boundaries(tmp_path, size):
    data = np.random.default_rng(size).bytes(size)
    (tmp_path / "f").write_bytes(data)
    assert _manifest._sha256(tmp_path, "f") == hashlib.sha256(data).hexdigest()


def test_hash_all_returns_every_name_whatever_the_order(tmp_path):
    sizes = {}
    for i, n in enumerate([5, 0, 3 * _manifest._CHUNK, 7]):
        (tmp_path / f"f{i}").write_bytes(bytes([i]) * n)
        sizes[f"f{i}"] = n
    sums = _manifest._hash_all(tmp_path, sizes)
    assert sums == {name: hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() for name in sizes}


def _largest_file(step_dir):
    files = [p for p in step_dir.rglob("*") if p.is_file()]
    return max(files, key=lambda p: p.stat().st_size)


@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_a_flipped_byte_in_a_multi_chunk_file_fails_restore(tmp_path, where):
    rng = np.random.default_rng(0)
    state = {"w": rng.standard_normal((3 * _manifest._CHUNK) // 4 + 5).astype(np.float32), "step": np.int32(1)}
    with CheckpointManager(tmp_path, handle_sigterm=False) as mgr:
        mgr.save(1, state)
    victim = _largest_file(tmp_path / "1")
    size = victim.stat().st_size
    assert size > 2 * _manifest._CHUNK
    offset = {"first": 0, "middle": size // 2, "last": size - 1}[where]
    with open(victim, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x01]))
    with CheckpointManager(tmp_path, handle_sigterm=False) as mgr:
        with pytest.raises(CheckpointCorruptError, match="fails its sha256 check") as info:
            mgr.restore(1)
        assert os.path.samefile(info.value.path, victim)
        with pytest.raises(CheckpointCorruptError, match=victim.name):
            mgr.verify(1)


def test_step_data_is_split_into_files_that_hash_apart(tmp_path, monkeypatch):
    """OCDBT writes a step as several data files of about DATA_FILE_BYTES (hashed in parallel); the
    state restores whole, and a flipped byte in any one of them fails the restore, naming it."""
    from pdx.checkpoint import _manager

    monkeypatch.setattr(_manager, "DATA_FILE_BYTES", 1 << 20)
    rng = np.random.default_rng(1)
    state = {f"w{i}": rng.standard_normal(300_000).astype(np.float32) for i in range(4)}
    with CheckpointManager(tmp_path, handle_sigterm=False) as mgr:
        mgr.save(1, state)
        restored = mgr.restore(1).state
    for k, v in state.items():
        np.testing.assert_array_equal(np.asarray(restored[k]), v)
    data = sorted((p for p in (tmp_path / "1").rglob("*") if p.is_file() and p.stat().st_size > (1 << 19)),
                  key=lambda p: p.stat().st_size)
    assert len(data) >= 3, [(p.name, p.stat().st_size) for p in data]
    assert data[-1].stat().st_size < 3 << 20
    victim = data[0]
    with open(victim, "r+b") as f:
        byte = f.read(1)
        f.seek(0)
        f.write(bytes([byte[0] ^ 0x01]))
    with CheckpointManager(tmp_path, handle_sigterm=False) as mgr:
        with pytest.raises(CheckpointCorruptError, match="fails its sha256 check") as info:
            mgr.restore(1)
        assert os.path.samefile(info.value.path, victim)
