"""`import pdx` is lazy: subpackages and heavy third-party modules load on first use.

Each check runs in a fresh interpreter, since this test process has imported
most of pdx already.
"""

import json
import os
import subprocess
import sys
import textwrap

# Loaded by `import pdx` before subpackages loaded on first use.
HEAVY = ["pdx.nn", "pdx.vision", "pdx.hapi", "pdx.optimizer", "pdx.sparse", "pdx.audio", "pdx.checkpoint",
         "pdx.jit", "pdx.io", "jax.experimental.sparse", "orbax", "grain", "IPython", "scipy"]


def _run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "JAX_PLATFORMS": "cpu"}, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_pdx_loads_no_subpackage_until_used():
    result = _run(f"""
        import json, sys
        import pdx
        import jax.numpy as jnp
        before = [m for m in {HEAVY!r} if m in sys.modules]
        x = jnp.arange(3.0)
        methods = [x.numpy().tolist(), x.unsqueeze(0).shape, x.sum(keepdim=True).shape]
        names = sorted(set(dir(pdx)) & {{"nn", "vision", "Model", "save", "TrainState"}})
        linear = pdx.nn.Linear(2, 3).weight.shape
        resnet = type(pdx.vision.models.resnet18()).__name__
        after = [m for m in ("pdx.nn", "pdx.vision", "pdx.vision.models") if m in sys.modules]
        print(json.dumps(dict(before=before, methods=methods, names=names, linear=linear, resnet=resnet,
                              after=after, model=pdx.Model.__module__, tensor=isinstance(x, pdx.Tensor))))
    """)
    assert result["before"] == []
    assert result["methods"] == [[0.0, 1.0, 2.0], [1, 3], [1]]  # Tensor methods without touching a subpackage
    assert result["names"] == ["Model", "TrainState", "nn", "save", "vision"]
    assert result["linear"] == [2, 3] and result["resnet"] == "ResNet"
    assert result["after"] == ["pdx.nn", "pdx.vision", "pdx.vision.models"]
    assert result["model"] == "pdx.hapi._model" and result["tensor"] is True


def test_first_import_of_any_subpackage_works_and_star_import_is_complete():
    result = _run("""
        import json, sys
        import pdx.export  # imports pdx.jit, which refers back to pdx.export
        from pdx.vision import transforms
        ok = [pdx.jit.TranslatedLayer is pdx.export.TranslatedLayer, "pdx.vision.models" not in sys.modules]
        ns = {}
        exec("from pdx import *", ns)
        print(json.dumps(dict(ok=ok, missing=sorted(set(pdx.__all__) - set(ns)))))
    """)
    assert result == {"ok": [True, True], "missing": []}


def test_unknown_attribute_raises_attribute_error_naming_it():
    result = _run("""
        import json, pdx
        try:
            pdx.no_such_name
        except AttributeError as e:
            print(json.dumps(str(e)))
    """)
    assert result == "module 'pdx' has no attribute 'no_such_name'"


def test_sparse_tensor_methods_arrive_with_jax_sparse():
    result = _run("""
        import json, sys
        import numpy as np
        import pdx
        before = "jax.experimental.sparse" in sys.modules
        from jax.experimental import sparse
        sp = sparse.BCOO.fromdense(np.array([[0.0, 2.0], [3.0, 0.0]]))
        print(json.dumps(dict(before=before, nnz=int(sp.nnz()), values=sp.values().tolist())))
    """)
    assert result == {"before": False, "nnz": 2, "values": [2.0, 3.0]}
