"""pdx.nn.functional (imported as F): Paddle's functional layer ops."""

__all__: list[str] = []
