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
