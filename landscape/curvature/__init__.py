"""Curvature of the loss at a point: Hessian-vector products over a whole data set (``hessian``), its
extreme eigenvalues by Lanczos (``eigen``), its trace by Hutchinson's estimator (``trace``), its
spectral density by stochastic Lanczos quadrature (``density``), and sharpness in a neighbourhood
(``sharpness``: worst-case adaptive, Keskar's ε, the average rise along random directions).

Nothing here knows about ranks or files: a sum over ranks, where wanted, is passed in.
"""

from .density import Density, slq
from .eigen import Eigenvalues, extreme, extremes
from .hessian import Hessian
from .trace import Trace, hutchinson

__all__ = ["Hessian", "Eigenvalues", "extreme", "extremes", "Trace", "hutchinson", "Density", "slq"]
