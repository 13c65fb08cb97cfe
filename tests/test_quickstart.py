"""The README's quickstart, run as a real script: LeNet on scikit-learn digits
must reach >= 95% test accuracy (the time is printed, never asserted)."""

import pathlib
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_quickstart_converges_on_digits():
    start = time.perf_counter()
    out = subprocess.run([sys.executable, str(ROOT / "recipes" / "quickstart.py")],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    elapsed = time.perf_counter() - start
    assert out.returncode == 0, out.stderr[-3000:]
    assert "eager step: loss" in out.stdout
    match = re.search(r"test accuracy ([0-9.]+)", out.stdout)
    assert match, out.stdout[-2000:]
    accuracy = float(match.group(1))
    print(f"quickstart: test accuracy {accuracy:.4f}, wall time {elapsed:.1f}s (target < 60 s)")
    assert accuracy >= 0.95
