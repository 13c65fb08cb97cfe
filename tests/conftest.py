"""Test environment: 8 host CPU devices (so sharding tests run anywhere) and
the installed paddlepaddle as the semantic oracle."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("GLOG_minloglevel", "2")

import pathlib  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

# Under `pytest -n 2` the modules below run first, slowest first (in-suite seconds from
# `pytest --durations=0`), so that the run does not end on one of them with the other worker
# idle. Modules whose tests share a costly module fixture carry `xdist_group` marks and stay on
# one worker (pyproject: `--dist loadgroup`, which schedules those groups before everything).
SLOW_FIRST = (
    "recipes/test_recipe_compress.py",
    "models/test_models_zoo.py",
    "parallel/test_parallel_hybrid.py",
    "inference/test_paddle_zoo_programs.py",
    "models/test_llm_speculative.py",
    "export/test_export_vision.py",
    "kernels/test_onednn.py",
    "parallel/test_sequence_parallel.py",
    "vision/test_vision_models.py",
    "vision/test_vision_model_families.py",
    "inference/test_paddle_detect_postprocess.py",
    "inference/test_paddle_import.py",
    "models/test_models_llama_family.py",
    "nn/test_layer_contract.py",
    "recipes/test_recipe_detect.py",
    "quantization/test_quantization.py",
    "test_tensor_methods.py",
    "export/test_llm_server.py",
    "recipes/test_recipe_llama_pretrain.py",
    "models/test_models_graph.py",
    "models/test_models_detection.py",
    "parallel/test_parallel_launch.py",
    "recipes/test_recipe_ocr.py",
    "recipes/test_recipe_text_classify.py",
    "recipes/test_recipe_node_classify.py",
)
_HERE = pathlib.Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}

    def order(item):
        try:
            return rank.get(item.path.resolve().relative_to(_HERE).as_posix(), len(rank))
        except ValueError:  # a test file outside tests/
            return len(rank)

    items.sort(key=order)  # stable: every other test keeps its place


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
