"""pdx.nn.utils: Paddle's `paddle.nn.utils` (weight/spectral norm reparameterizations,
flat parameter vectors, gradient clipping utilities)."""

from pdx.nn._spectral_norm_hook import spectral_norm
from pdx.nn.utils._clip_grad import clip_grad_norm_, clip_grad_value_
from pdx.nn.utils._transform_parameters import parameters_to_vector, vector_to_parameters
from pdx.nn.utils._weight_norm_hook import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "remove_weight_norm", "spectral_norm",
           "vector_to_parameters", "weight_norm"]
