"""Test environment: 8 host CPU devices (so sharding tests run anywhere) and
the installed paddlepaddle as the semantic oracle."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("GLOG_minloglevel", "2")

import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(scope="session")
def paddle():
    """The installed paddlepaddle on CPU, used as the reference implementation."""
    pd = pytest.importorskip("paddle")
    pd.set_device("cpu")
    pd.disable_static()
    return pd


@pytest.fixture
def rng():
    """A fresh numpy Generator per test (independent of pdx's own RNG)."""
    return np.random.default_rng(1234)


class PeakRSS:
    """Peak resident memory growth (MB) of this process inside a `with` block (Linux: /proc/self/clear_refs)."""

    def __enter__(self):
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak (VmHWM) to the current RSS
        self.base = self._read("VmRSS")
        return self

    def __exit__(self, *exc):
        self.grown_mb = (self._read("VmHWM") - self.base) / 1024

    @staticmethod
    def _read(key):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(key + ":"))


@pytest.fixture
def peak_rss():
    """`with peak_rss() as m: ...` then `m.grown_mb`: the block's peak memory growth (Linux)."""
    return PeakRSS
