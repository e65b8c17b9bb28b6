"""Gradient-based optimizers (Warp's ``warp.optim``): :class:`SGD` and :class:`Adam`.

``import weft.optim`` (or use ``wp.optim``). Both update lists of arrays in place with weft
kernels; parameters may be arrays of float16/float32/float64 scalars or of vectors/matrices of
those (the update is component-wise).
"""

from .adam import Adam
from .sgd import SGD

__all__ = ["Adam", "SGD"]
