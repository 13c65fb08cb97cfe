"""llama-tiny's forward through the artifact: dynamic batch and sequence
length on XLA, a (1, 16) IREE module on the host."""

import numpy as np

import pdx
import pdx.export
from pdx.jit import InputSpec
from pdx.models.llama import LlamaForCausalLM


def test_llama_tiny_round_trip(tmp_path, rng):
    pdx.seed(0)
    model = LlamaForCausalLM("tiny")
    model.eval()
    path = pdx.export.export(model, tmp_path / "llama", [InputSpec([None, None], "int32", "input_ids")],
                             targets=("xla", "iree-llvm-cpu"), iree={"dims": {"batch": 1, "dim1": 16}},
                             platforms=("cpu",))
    manifest = pdx.export.load(path).manifest
    assert manifest["inputs"][0]["shape"] == ["batch", "dim1"]
    assert manifest["outputs"][0]["shape"] == ["batch", "dim1", 256]
    xla, layer = pdx.export.load(path), pdx.jit.load(path)
    ids = rng.integers(0, 256, (3, 7)).astype(np.int32)  # neither dim is the IREE specialization
    want = np.asarray(pdx.jit(lambda v: model(v))(ids))
    np.testing.assert_allclose(xla(ids), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(layer(ids)), want, rtol=1e-5, atol=1e-5)
    ids = rng.integers(0, 256, (1, 16)).astype(np.int32)
    np.testing.assert_allclose(pdx.export.load(path, runtime="iree")(ids), np.asarray(model(ids)), rtol=1e-4, atol=1e-4)
