"""The README's quickstart, run as a real script: LeNet on scikit-learn digits
through an eager step, a pdx.jit step and `pdx.Model.fit` must reach >= 97%
test accuracy with a visible progress bar and TensorBoard event files (the
time is printed, never asserted)."""

import glob
import json
import pathlib
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_quickstart_converges_on_digits(tmp_path):
    start = time.perf_counter()
    out = subprocess.run([sys.executable, str(ROOT / "recipes" / "quickstart.py"),
                          "--log-dir", str(tmp_path / "tb"), "--save-dir", str(tmp_path / "ckpt"),
                          "--ckpt-dir", str(tmp_path / "state"), "--artifact-dir", str(tmp_path / "artifact")],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    elapsed = time.perf_counter() - start
    assert out.returncode == 0, out.stderr[-3000:]
    assert "eager step: loss" in out.stdout and "compiled step: loss" in out.stdout
    assert "Epoch 10/10" in out.stdout and "44/44" in out.stdout and "step/s" in out.stdout  # the progress bar
    match = re.search(r"test accuracy ([0-9.]+)", out.stdout)
    assert match, out.stdout[-2000:]
    accuracy = float(match.group(1))
    print(f"quickstart: test accuracy {accuracy:.4f}, wall time {elapsed:.1f}s (target < 60 s)")
    assert accuracy >= 0.97
    assert glob.glob(str(tmp_path / "tb" / "events.out.tfevents.*"))
    assert (tmp_path / "ckpt" / "final.pdparams.safetensors").exists()
    # deployment: checkpoint shown by `pdx ckpt inspect`, the artifact on both runtimes, one served request
    assert "$ pdx ckpt inspect" in out.stdout and re.search(r"\d+ arrays, [0-9.]+ KiB", out.stdout)
    for runtime in ("xla", "iree"):
        got = re.search(rf"{runtime} runtime: test accuracy ([0-9.]+)", out.stdout)
        assert got and abs(float(got.group(1)) - accuracy) < 0.01, out.stdout[-2000:]
    served = re.search(r"served: .* classes (\[[0-9, ]+\]) \(labels (\[[0-9, ]+\])\)", out.stdout)
    assert served, out.stdout[-1000:]
    agree = sum(a == b for a, b in zip(json.loads(served.group(1)), json.loads(served.group(2))))
    assert agree >= 3, served.group(0)  # a ~98% model: at most one of four wrong
    assert (tmp_path / "artifact" / "manifest.json").exists()
