"""A library-side module for the isolation tests (loaded by file path in a worker; it imports
no ``audit``): a seeded noisy sum, with behaviours chosen by its parameters to exercise the
worker's lifecycle.

Parameters: ``scale`` (the Laplace scale, default 1.0); ``crash_on`` (the call at which the
worker exits with status 7, from ``os._exit``); ``hang_on`` (the call at which it sleeps for
an hour); ``raise_on`` (the call at which the release raises ``ArithmeticError``); ``noisy``
(print to standard output, from Python and from C, on every call); ``bad_shape`` (return one
release too many). Its information names the folder of the worker's temporary files
(``tmp``), where it leaves a file as a killed library would.
"""

import ctypes
import os
import tempfile
import time

import numpy as np

INFO = {"numpy": np.__version__}


def make(params):
    if params.get("refuse"):
        raise ValueError("parameter 'refuse' is set")
    scale = float(params.get("scale", 1.0))
    calls = [0]

    def release(datasets, seed):
        calls[0] += 1
        if calls[0] == params.get("crash_on"):
            os._exit(7)
        if calls[0] == params.get("hang_on"):
            time.sleep(3600)
        if calls[0] == params.get("raise_on"):
            raise ArithmeticError("the library failed on this call")
        if params.get("noisy"):
            print("chatter from python")
            ctypes.CDLL(None).puts(b"chatter from C")
        rng = np.random.default_rng(seed)
        m = datasets.shape[0]
        out = np.nansum(datasets, axis=(1, 2)) + rng.laplace(scale=scale, size=m)
        return np.append(out, 0.0) if params.get("bad_shape") else out

    left = tempfile.mkstemp(prefix="left-by-the-library-")[1]
    return release, {"numpy": np.__version__, "scale": scale, "tmp": left}
