"""Checkpoints under hostile or unlucky directories: damaged markers, special files, links leaving
the directory, renamed steps, a missing checksum table, and steps pruned while being restored."""

import argparse
import hashlib
import json
import os
import shutil
import threading
import time

import numpy as np
import pytest

from pdx.checkpoint import (
    CheckpointCorruptError,
    CheckpointManager,
    CheckpointNotFoundError,
)
from pdx.checkpoint import _cli
from pdx.cli import main


def _state(step: int) -> dict:
    rng = np.random.default_rng(step)
    return {"params": {"w": rng.standard_normal((8, 4)).astype(np.float32),
                       "b": rng.standard_normal(4).astype(np.float32)},
            "step": np.int32(step)}


def _manager(path, **kwargs) -> CheckpointManager:
    return CheckpointManager(path, handle_sigterm=False, **kwargs)


def _assert_state(restored, step: int) -> None:
    want = _state(step)
    for key in ("w", "b"):
        got = np.asarray(restored["params"][key])
        assert got.dtype == want["params"][key].dtype and got.tobytes() == want["params"][key].tobytes()
    assert int(restored["step"]) == step


def _save(directory, *steps) -> None:
    with _manager(directory, async_save=False) as mgr:
        for step in steps:
            mgr.save(step, _state(step), data_state={"pos": step})


def _verify_exit(path, capsys) -> int:
    code = main(["ckpt", "verify", str(path)])
    capsys.readouterr()
    return code


def _ckpt_command():
    """`pdx ckpt` built once (the full `pdx` parser costs ~14 ms a call; the marker test makes 1,000)."""
    parser = argparse.ArgumentParser(prog="pdx ckpt")
    _cli.configure(parser)

    def run(*argv) -> int:
        args = parser.parse_args(list(argv))
        return args.func(args)

    return run


def _reseal(step_dir, manifest: dict) -> None:
    """Write `manifest` and a matching marker, as a tool that rewrites both would."""
    blob = json.dumps(manifest, indent=1, sort_keys=True).encode()
    (step_dir / "MANIFEST.json").write_bytes(blob)
    (step_dir / "COMMITTED").write_bytes(hashlib.sha256(blob).hexdigest().encode() + b"\n")


def test_every_bit_flip_of_the_commit_marker_is_corrupt(tmp_path, capsys):
    _save(tmp_path, 1)
    marker = tmp_path / "1" / "COMMITTED"
    original = marker.read_bytes()
    mgr = _manager(tmp_path)
    ckpt = _ckpt_command()
    flips = 0
    for offset in range(len(original)):
        for bit in range(8):
            blob = bytearray(original)
            blob[offset] ^= 1 << bit
            marker.write_bytes(bytes(blob))
            with pytest.raises(CheckpointCorruptError, match="COMMITTED"):
                mgr.verify(1)
            with pytest.raises(CheckpointCorruptError):
                mgr.restore(1)
            assert ckpt("verify", str(tmp_path / "1")) == 1, (offset, bit)
            assert ckpt("verify", str(tmp_path)) == 1, (offset, bit)
            capsys.readouterr()
            flips += 1
    assert flips == 8 * 65
    assert _verify_exit(tmp_path / "1", capsys) == 1  # the whole `pdx` command, once
    marker.write_bytes(original)
    _assert_state(mgr.restore(1).state, 1)
    assert _verify_exit(tmp_path, capsys) == 0


def _run_with_deadline(fn, seconds: float = 20.0):
    """fn() in a daemon thread; returns (exception or None, elapsed seconds); fails on a hang."""
    out = {}

    def target():
        start = time.monotonic()
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 -- handed back to the test
            out["error"] = e
        out["elapsed"] = time.monotonic() - start

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    return thread.is_alive(), out.get("error"), out.get("elapsed")


def _unblock_fifo(path) -> None:
    """Let a reader stuck opening the FIFO see EOF, so no thread stays blocked after the test."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
    except OSError:
        pass


@pytest.mark.parametrize("victim", ["state/_METADATA", "data"])
def test_fifo_device_and_outside_link_are_refused_quickly(tmp_path, capsys, victim):
    directory = tmp_path / "run"
    _save(directory, 1)
    step_dir = directory / "1"
    if victim == "data":
        victim = str(max((p for p in (step_dir / "state").rglob("*") if "/d/" in str(p) and p.is_file()),
                         key=lambda p: p.stat().st_size).relative_to(step_dir))
    path = step_dir / victim
    original = path.read_bytes()
    outside = tmp_path / "outside.bin"
    outside.write_bytes(original)  # same bytes, same size, same sha256: only the link gives it away

    makers = {
        "fifo": lambda: os.mkfifo(path),
        "device": lambda: os.symlink("/dev/zero", path),
        "outside link": lambda: os.symlink(outside, path),
    }
    for kind, make in makers.items():
        path.unlink()
        make()
        mgr = _manager(directory)
        for verify in (True, False):
            hung, error, elapsed = _run_with_deadline(lambda: mgr.restore(1, verify=verify))
            if hung:
                _unblock_fifo(path)
            assert not hung, f"restore(verify={verify}) hangs on a {kind} at {victim}"
            assert isinstance(error, CheckpointCorruptError), (kind, verify, error)
            assert victim in str(error) and elapsed < 1.0, (kind, elapsed, error)
        hung, error, _ = _run_with_deadline(lambda: mgr.verify(1))
        assert not hung and isinstance(error, CheckpointCorruptError), (kind, error)
        hung, _, _ = _run_with_deadline(lambda: _verify_exit(step_dir, capsys))
        assert not hung
        assert _verify_exit(step_dir, capsys) == 1, kind
        assert _verify_exit(directory, capsys) == 1, kind
        path.unlink()
        path.write_bytes(original)
    _assert_state(_manager(directory).restore(1).state, 1)


def test_renamed_or_copied_step_is_refused(tmp_path, capsys):
    _save(tmp_path, 1, 2)
    shutil.copytree(tmp_path / "1", tmp_path / "99")
    os.rename(tmp_path / "2", tmp_path / "50")
    mgr = _manager(tmp_path)
    assert mgr.all_steps() == [1, 50, 99]
    for step, recorded in ((99, 1), (50, 2)):
        with pytest.raises(CheckpointCorruptError, match=f"step {recorded}") as err:
            mgr.restore(step)
        assert f"{tmp_path / str(step)}" in str(err.value)
        with pytest.raises(CheckpointCorruptError):
            mgr.restore(step, verify=False)
        with pytest.raises(CheckpointCorruptError):
            mgr.verify(step)
        assert _verify_exit(tmp_path / str(step), capsys) == 1
    with pytest.raises(CheckpointCorruptError):
        mgr.restore()  # the latest step (99) is the copy
    assert _ckpt_command()("ls", str(tmp_path), "--json") == 0  # still listed, marked
    assert {r["step"]: r["status"] for r in json.loads(capsys.readouterr().out)} == {
        1: "committed", 50: "damaged", 99: "damaged"}
    _assert_state(mgr.restore(1).state, 1)


def test_checksum_table_and_recorded_step_are_required(tmp_path, capsys):
    _save(tmp_path, 1)
    step_dir = tmp_path / "1"
    manifest = json.loads((step_dir / "MANIFEST.json").read_text())
    meta = (step_dir / "pdx_meta.json").read_bytes()
    mgr = _manager(tmp_path)
    no_step = json.loads(meta)
    del no_step["step"]
    no_step_blob = json.dumps(no_step).encode()
    no_step_files = dict(manifest["files"], **{"pdx_meta.json": {
        "bytes": len(no_step_blob), "sha256": hashlib.sha256(no_step_blob).hexdigest()}})
    cases = {
        "no files table": ({k: v for k, v in manifest.items() if k != "files"}, meta),
        "empty files table": (dict(manifest, files={}), meta),
        "files table is a list": (dict(manifest, files=list(manifest["files"])), meta),
        "entry without sha256": (dict(manifest, files={k: {"bytes": v["bytes"]} for k, v in
                                                       manifest["files"].items()}), meta),
        "path leaving the step": (dict(manifest, files=dict(manifest["files"], **{
            "../escape": {"bytes": 0, "sha256": hashlib.sha256(b"").hexdigest()}})), meta),
        "meta without step": (dict(manifest, files=no_step_files), no_step_blob),
    }
    for name, (bad_manifest, bad_meta) in cases.items():
        _reseal(step_dir, bad_manifest)
        (step_dir / "pdx_meta.json").write_bytes(bad_meta)
        for call in (lambda: mgr.verify(1), lambda: mgr.restore(1), lambda: mgr.restore(1, verify=False)):
            with pytest.raises(CheckpointCorruptError):
                call()
        assert _verify_exit(step_dir, capsys) == 1, name
    _reseal(step_dir, manifest)
    (step_dir / "pdx_meta.json").write_bytes(meta)
    _assert_state(mgr.restore(1).state, 1)


def test_restoring_while_another_writer_prunes_gives_one_typed_error(tmp_path):
    directory = tmp_path / "run"
    _save(directory, 0)
    stop = threading.Event()
    writer_errors = []

    def writer():
        try:
            with _manager(directory, max_to_keep=2, async_save=False) as mgr:
                step = 1
                while not stop.is_set():
                    mgr.save(step, _state(step), data_state={"pos": step})
                    step += 1
        except BaseException as e:  # noqa: BLE001 -- checked below
            writer_errors.append(e)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    reader = _manager(directory)
    outcomes = {"ok": 0, "deleted mid-restore": 0}
    wrong = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and (outcomes["ok"] < 3 or outcomes["deleted mid-restore"] < 2):
            steps = reader.all_steps()
            if not steps:
                continue
            step = steps[0]  # the oldest: the next commit prunes it
            try:
                ckpt = reader.restore(step, verify=bool(step % 2))
            except CheckpointNotFoundError as e:  # before (no such step) or while it was read
                kind = "deleted mid-restore" if "while it was being restored" in str(e) else "gone before"
                outcomes[kind] = outcomes.get(kind, 0) + 1
                assert str(step) in str(e)
            except BaseException as e:  # noqa: BLE001 -- any other type is the failure under test
                wrong.append(f"{type(e).__name__}: {e}")
            else:
                _assert_state(ckpt.state, step)
                assert ckpt.step == step and ckpt.data_state == {"pos": step}
                outcomes["ok"] += 1
    finally:
        stop.set()
        thread.join(60)
    assert not writer_errors, writer_errors
    assert not wrong, wrong[:5]
    assert outcomes["ok"] >= 3 and outcomes["deleted mid-restore"] >= 2, outcomes
