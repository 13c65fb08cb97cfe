"""Every runtime validates inputs the same way, with a ValueError that names
the input and says what was expected."""

import numpy as np
import pytest

import pdx
import pdx.export
from pdx.jit import InputSpec


def scaled(x, ids):
    return x * ids[:, None].astype(x.dtype)


@pytest.fixture(scope="module")
def runners(tmp_path_factory):
    path = pdx.export.export(scaled, tmp_path_factory.mktemp("val") / "scaled",
                             [InputSpec([None, 4], "float32", "x"), InputSpec([None], "int32", "ids")],
                             targets=("xla", "iree-llvm-cpu"), iree={"batch_split": True})
    layer = pdx.jit.load(path)
    return {"xla": pdx.export.load(path), "iree": pdx.export.load(path, runtime="iree"),
            "jit": layer}


X = np.arange(12, dtype=np.float32).reshape(3, 4)
IDS = np.array([1, 2, 3], np.int32)

CASES = [
    ("dtype", (X.astype(np.float64), IDS), r"input 'x' has dtype float64, expected float32"),
    ("int dtype", (X, IDS.astype(np.float32)), r"input 'ids' has dtype float32, expected int32"),
    ("rank", (X[None], IDS), r"input 'x' has rank 3 .* expected rank 2"),
    ("static dim", (np.ones((3, 5), np.float32), IDS), r"input 'x' has shape \[3, 5\].*dim 1 must be 4, got 5"),
    ("arity", (X,), r"expected 2 input\(s\) \(x: float32\[batch, 4\]; ids: int32\[batch\]\) but got 1"),
    ("too many", (X, IDS, IDS), r"expected 2 input\(s\)"),
    ("empty batch", (X[:0], IDS[:0]), r"dynamic dim 0 \(batch\) must be >= 1, got 0"),
    ("batch mismatch", (X, IDS[:2]), r"input 'ids' dim 0 is 2 but input 'x' dim 0 is 3"),
]


@pytest.mark.parametrize("runtime", ["xla", "iree", "jit"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_value_error_naming_it(runners, runtime, case):
    _, args, pattern = case
    with pytest.raises(ValueError, match=pattern):
        runners[runtime](*args)


@pytest.mark.parametrize("runtime", ["xla", "iree", "jit"])
def test_good_input_runs(runners, runtime):
    np.testing.assert_allclose(np.asarray(runners[runtime](X, IDS)), X * IDS[:, None])


def test_check_inputs_converts_json_lists_to_declared_dtypes(runners):
    predictor = runners["xla"]
    x, ids = predictor.check_inputs(X.tolist(), [1, 2, 3])
    assert x.dtype == np.float32 and ids.dtype == np.int32
    np.testing.assert_allclose(predictor(X.tolist(), [1, 2, 3]), X * IDS[:, None])
    with pytest.raises(ValueError, match=r"input 'ids' is int32 but the given values do not fit"):
        predictor.check_inputs(X.tolist(), [1.5, 2, 3])
    with pytest.raises(ValueError, match=r"input 'ids' is int32 but the given values do not fit"):
        predictor.check_inputs(X.tolist(), [2**40, 2, 3])
    with pytest.raises(ValueError, match="must hold numbers"):
        predictor.check_inputs(X.tolist(), ["a", "b", "c"])
    with pytest.raises(ValueError, match="not a rectangular array"):
        predictor.check_inputs([[1.0, 2.0], [3.0]], [1, 2])


def test_runtime_and_target_arguments_are_checked(tmp_path):
    path = pdx.export.export(scaled, tmp_path / "s", [InputSpec([None, 4], "float32", "x"), InputSpec([None], "int32", "ids")])
    with pytest.raises(ValueError, match="runtime='tflite' must be one of"):
        pdx.export.load(path, runtime="tflite")
    with pytest.raises(ValueError, match="has no 'iree-llvm-cpu' target"):
        pdx.export.load(path, runtime="iree")
    with pytest.raises(ValueError, match=r"unknown target\(s\) \['iree-metal'\]"):
        pdx.export.export(scaled, tmp_path / "t", [InputSpec([None, 4]), InputSpec([None], "int32")], targets=["iree-metal"])
    with pytest.raises(ValueError, match="IREE targets need static shapes.*'dim1'"):
        pdx.export.export(lambda x: x * 2, tmp_path / "u", [InputSpec([None, None])], targets=["iree-llvm-cpu"])
    with pytest.raises(ValueError, match="name='a b' must be"):
        pdx.export.export(scaled, tmp_path / "v", [InputSpec([None, 4]), InputSpec([None], "int32")], name="a b")
