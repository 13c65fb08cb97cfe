"""pdx's version and what it runs on (Paddle's `paddle.version`: full_version, major, minor, cuda(), show()).

Example:
  >>> import pdx
  >>> pdx.version.full_version == pdx.__version__
  True
"""

from __future__ import annotations

import jax

__all__ = ["commit", "cuda", "cudnn", "full_version", "istaged", "major", "minor", "patch", "rc", "show",
           "with_mkl", "xpu"]

full_version = "0.1.0"
major, minor, patch = full_version.split(".")
rc = "0"
istaged = True
commit = "unknown"
with_mkl = "OFF"


def cuda() -> str:
    """The CUDA version of JAX's GPU backend (e.g. '12.8'), or 'False' without one, as Paddle.

    Returns:
      A string.

    Example:
      >>> import pdx
      >>> isinstance(pdx.version.cuda(), str)
      True
    """
    from pdx.device import is_compiled_with_cuda

    if not is_compiled_with_cuda():
        return "False"
    version = getattr(jax.devices("gpu")[0].client, "platform_version", "")
    return version.replace("cuda", "").strip() or "True"


def cudnn() -> str:
    """The cuDNN version of JAX's GPU backend, or 'False' without one.

    Returns:
      A string.

    Example:
      >>> import pdx
      >>> isinstance(pdx.version.cudnn(), str)
      True
    """
    from pdx.device import get_cudnn_version

    version = get_cudnn_version()
    return str(version) if version else "False"


def xpu() -> str:
    """Always 'False': JAX has no XPU backend.

    Returns:
      'False'.

    Example:
      >>> import pdx
      >>> pdx.version.xpu()
      'False'
    """
    return "False"


def show() -> None:
    """Print the pdx, JAX and accelerator versions.

    Returns:
      None.

    Example:
      >>> import pdx
      >>> pdx.version.show()  # doctest: +SKIP
    """
    print(f"full_version: {full_version}\nmajor: {major}\nminor: {minor}\npatch: {patch}\n"
          f"jax: {jax.__version__}\ncuda: {cuda()}\ncudnn: {cudnn()}")
