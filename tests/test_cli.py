"""The `pdx` console script, run as a real subprocess."""

import subprocess
import sys

import pdx


def test_version_and_env():
    out = subprocess.run([sys.executable, "-m", "pdx.cli", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"pdx {pdx.__version__}"
    env = subprocess.run([sys.executable, "-m", "pdx.cli", "env"], capture_output=True, text=True, check=True)
    assert "jax" in env.stdout and "device" in env.stdout


def test_unknown_command_fails_cleanly():
    out = subprocess.run([sys.executable, "-m", "pdx.cli", "frobnicate"], capture_output=True, text=True)
    assert out.returncode == 2 and "invalid choice" in out.stderr
