"""`python -m pdx.distributed.launch`: Paddle's launcher spelling of `pdx launch`."""

from pdx.distributed.launch._main import launch

__all__ = ["launch"]
