"""pdx.models: the model zoo.

    pdx.models.llama    LLaMA-style decoders (presets tiny .. 7b), generation, HF weight import

Vision models live in `pdx.vision.models` (Paddle's place for them).
"""

from pdx.models import llama

__all__ = ["llama"]
