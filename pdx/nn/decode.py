"""Paddle's `paddle.nn.decode` module: `Decoder` (the base of custom decoders),
`BeamSearchDecoder` and `dynamic_decode`.

Example:
    >>> import pdx
    >>> pdx.nn.decode.BeamSearchDecoder is pdx.nn.BeamSearchDecoder
    True
"""

from pdx.nn._decode import BeamSearchDecoder, Decoder, dynamic_decode

__all__ = ["BeamSearchDecoder", "Decoder", "dynamic_decode"]
