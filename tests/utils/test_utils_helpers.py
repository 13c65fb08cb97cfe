"""pdx.utils: try_import, require_version, run_check, unique_name, dlpack and structure helpers vs paddle."""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx.utils import (deprecated, dlpack, flatten, map_structure, pack_sequence_as, require_version, run_check,
                       try_import, unique_name)


def test_try_import():
    assert try_import("math").sqrt(9.0) == 3.0
    with pytest.raises(ImportError, match="pip install no_such_module_xyz"):
        try_import("no_such_module_xyz")
    with pytest.raises(ImportError, match="custom message"):
        try_import("no_such_module_xyz", "custom message")


def test_require_version():
    require_version("2.0")
    require_version("3.0", "3.9")
    with pytest.raises(Exception, match="needs >= 4.0"):
        require_version("4.0")
    with pytest.raises(ValueError, match="min_version"):
        require_version("three")


def test_run_check(capsys):
    run_check()
    assert "installed successfully" in capsys.readouterr().out


def test_unique_name_matches_paddle(paddle):
    with unique_name.guard(), paddle.utils.unique_name.guard():
        ours = [unique_name.generate(k) for k in ("fc", "fc", "conv", "fc")]
        theirs = [paddle.utils.unique_name.generate(k) for k in ("fc", "fc", "conv", "fc")]
    assert ours == theirs == ["fc_0", "fc_1", "conv_0", "fc_2"]
    with unique_name.guard("blk_"):
        assert unique_name.generate("w") == "blk_w_0"


def test_structure_helpers_match_paddle(paddle):
    nest = {"b": [1, (2, 3)], "a": 4, "c": {"z": 5, "y": 6}}
    assert flatten(nest) == paddle.utils.flatten(nest)
    flat = list(range(10, 16))
    assert pack_sequence_as(nest, flat) == paddle.utils.pack_sequence_as(nest, flat)
    assert map_structure(lambda a, b: a * b, [1, (2, 3)], [4, (5, 6)]) == [4, (10, 18)]
    with pytest.raises(ValueError, match="6 leaves"):
        pack_sequence_as(nest, [1])


def test_dlpack_round_trip_with_paddle(paddle):
    x = jnp.arange(6.0).reshape(2, 3)
    theirs = paddle.utils.dlpack.from_dlpack(dlpack.to_dlpack(x))
    np.testing.assert_array_equal(theirs.numpy(), np.asarray(x))
    back = dlpack.from_dlpack(paddle.to_tensor(np.arange(4, dtype=np.int32)))
    assert back.tolist() == [0, 1, 2, 3]
    with pytest.raises(TypeError, match="__dlpack__"):
        dlpack.from_dlpack([1, 2])


def test_deprecated_warns_or_raises():
    @deprecated(update_to="pdx.new", since="0.1")
    def old():
        return 1

    with pytest.warns(DeprecationWarning, match="use pdx.new instead"):
        assert old() == 1

    @deprecated(level=2)
    def gone():
        return 1

    with pytest.raises(RuntimeError, match="deprecated"):
        gone()


def test_version_module(paddle):
    assert pdx.version.full_version == pdx.__version__
    assert (pdx.version.major, pdx.version.minor) == tuple(pdx.__version__.split(".")[:2])
    assert pdx.version.xpu() == "False"
