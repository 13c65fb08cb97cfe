"""pdx.ops: pure tensor ops with Paddle 3.x names, arguments and defaults."""

__all__: list[str] = []
