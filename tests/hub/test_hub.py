"""pdx.hub over a local hubconf.py directory, against paddle.hub on the same directory."""

import sys
import textwrap

import pytest

import pdx

HUBCONF = textwrap.dedent('''
    """A test hub."""
    dependencies = ["numpy"]
    from helpers import WIDTH


    def mlp(width=WIDTH):
        """A two-layer MLP."""
        import pdx
        return pdx.nn.Sequential(pdx.nn.Linear(4, width), pdx.nn.ReLU(), pdx.nn.Linear(width, 2))


    def _private():
        return None


    class Tiny:
        """A class entry point."""
''')


@pytest.fixture
def hub_dir(tmp_path):
    (tmp_path / "hubconf.py").write_text(HUBCONF)
    (tmp_path / "helpers.py").write_text("WIDTH = 8\n")
    return tmp_path


def test_local_hub_lists_helps_and_loads_like_paddle(paddle, hub_dir, tmp_path_factory):
    path_before = list(sys.path)
    assert pdx.hub.list(str(hub_dir), source="local") == paddle.hub.list(str(hub_dir), source="local")
    assert pdx.hub.list(hub_dir, source="local") == ["Tiny", "mlp"]
    assert pdx.hub.help(str(hub_dir), "mlp", source="local") == paddle.hub.help(str(hub_dir), "mlp", source="local")
    net = pdx.hub.load(str(hub_dir), "mlp", source="local", width=16)
    assert net[0].weight.shape == (4, 16)
    assert sys.path == path_before and "hubconf" not in sys.modules

    for source in ("github", "gitee"):
        with pytest.raises(RuntimeError, match="never downloads.*source='local'"):
            pdx.hub.load("PaddlePaddle/PaddleClas:develop", "resnet50", source=source)
    with pytest.raises(ValueError, match="unknown source"):
        pdx.hub.list(str(hub_dir), source="s3")
    with pytest.raises(RuntimeError, match="no entry point 'nope'.*mlp"):
        pdx.hub.load(str(hub_dir), "nope", source="local")
    with pytest.raises(RuntimeError, match="no entry point"):
        pdx.hub.load(str(hub_dir), "_private", source="local")
    empty = tmp_path_factory.mktemp("empty")
    with pytest.raises(FileNotFoundError, match="hubconf.py"):
        pdx.hub.list(str(empty), source="local")
    (empty / "hubconf.py").write_text("dependencies = ['no_such_module_xyz']\ndef m():\n    return 1\n")
    with pytest.raises(RuntimeError, match="no_such_module_xyz"):
        pdx.hub.load(str(empty), "m", source="local")
    with pytest.raises(RuntimeError, match="never downloads"):
        pdx.hub.load_state_dict_from_url("https://example.com/w.pdparams")
