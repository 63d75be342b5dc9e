"""Small laws shared by the engine tests and the CUDA simulator cases (no pytest import: the
simulator cases run as a script)."""

from audit.mixture import Mixture

# scalar (Laplace, Gaussian), 2-d and 3-d vector mixtures, odd and even dimensions
P = Mixture([0.2, 0.5, 0.3], [0.0, 1.0, 3.0], "laplace", 1.0)
Q = Mixture([1.0], [0.0], "laplace", 1.0)
PG = Mixture([0.7, 0.3], [0.0, 1.5], "gaussian", 0.8)
QG = Mixture([1.0], [0.5], "gaussian", 0.8)
PV = Mixture([0.6, 0.4], [[0.0, 0.0], [1.0, -1.0]], "gaussian", 0.7)
QV = Mixture([0.5, 0.5], [[0.0, 0.0], [-1.0, 0.5]], "gaussian", 0.7)
P3 = Mixture([0.6, 0.3, 0.1], [[0.0, 0.0, 1.0], [1.0, -1.0, 0.0], [2.0, 0.0, 0.0]],
             "gaussian", 1.1)
Q3 = Mixture([1.0], [[0.0, 0.0, 0.0]], "gaussian", 1.1)
L3 = Mixture([0.6, 0.4], [[0.0, 0.0, 1.0], [1.0, -1.0, 0.0]], "laplace", 0.9)
M3 = Mixture([0.5, 0.5], [[0.0, 0.5, 0.0], [0.0, -1.0, 0.0]], "laplace", 0.9)
