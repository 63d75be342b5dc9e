"""dpmm's side of the ``dpmm`` adapter: runs in its worker, in its own environment (it imports
``dpmm``, pandas and numpy, never ``audit``; see :mod:`audit.adapters.dpmm` for the semantics
and the sources).

``make(params)`` builds, once per worker, the pipeline a user writes (``MSTPipeline``,
``AIMPipeline`` or ``PrivBayesPipeline`` with ``epsilon``, ``delta``, ``proc_epsilon=None``:
dpmm's uniform binner, ``n_bins``, and the generator's ``n_iters``, ``n_jobs=1``) as a
template. Each release deep-copies the template (a fitted pipeline does not refit: its binner
keeps its first fit, pipelines/base.py:78-82; building one anew spends a tenth of a second on
dpmm's ``cdp_rho`` search), fits it on a one-column DataFrame ``x`` (the dataset's column,
NaN as NaN) with the domain ``{"x": {"lower": lo, "upper": hi}}`` (a new dict each call: the
binner adds the NaN indicator's domain to it), generates ``rows`` synthetic rows, and releases
two statistics of the synthetic column: the fraction of NaN rows and the mean of the other
rows (the midpoint of the bounds when every row is NaN, so the release is never NaN).

The seed seeds dpmm's ``random_state`` (a ``numpy.random.RandomState``: the fill value, the
clique selection, the sampling of the synthetic rows); the measurements' Gaussian noise is
OpenDP's (its CSPRNG), which no seed reaches.
"""

import copy
import logging
import warnings
from importlib import metadata

import numpy as np

INFO = {"distribution": "dpmm"}
#: the column name the dataset's column gets in the DataFrame
COLUMN = "x"
#: the name of the second table column (parameter ``companion``), modelled, never released
COMPANION = "y"


def _pipeline(params):
    from dpmm.pipelines import AIMPipeline, MSTPipeline, PrivBayesPipeline

    cls = {"mst": MSTPipeline, "aim": AIMPipeline, "privbayes": PrivBayesPipeline}
    return cls[params["function"]](
        epsilon=float(params["epsilon"]), delta=float(params["delta"]), n_jobs=1,
        proc_epsilon=None, n_bins=int(params["n_bins"]),
        gen_kwargs={"n_iters": int(params["n_iters"])})


def make(params):
    import pandas as pd

    logging.getLogger("dpmm").setLevel(logging.ERROR)
    template = _pipeline(params)
    lo, hi = (float(v) for v in params["bounds"])
    column = int(params.get("column", 0))
    companion = params.get("companion")
    rows = int(params["rows"])
    generator = template.gen.generator

    def one(record, seed):
        pipe = copy.deepcopy(template)
        columns = {COLUMN: column} if companion is None else {COLUMN: column,
                                                              COMPANION: int(companion)}
        df = pd.DataFrame({name: np.asarray(record[:, j], dtype=np.float64)
                           for name, j in columns.items()})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pipe.fit(df, domain={name: {"lower": lo, "upper": hi} for name in columns},
                     random_state=seed)
            synth = pipe.generate(n_records=rows, random_state=seed)
        x = synth[COLUMN].to_numpy(dtype=np.float64)
        missing = np.isnan(x)
        mean = float(x[~missing].mean()) if (~missing).any() else 0.5 * (lo + hi)
        return [float(missing.mean()), mean]

    def release(datasets, seed):
        for name, j in (("column", column), ("companion", companion)):
            if j is not None and j >= datasets.shape[2]:
                raise ValueError(f"parameter {name!r} is {j} but the data has "
                                 f"{datasets.shape[2]} columns")
        seeds = np.random.SeedSequence(seed).generate_state(len(datasets))
        return np.array([one(x, int(s)) for x, s in zip(datasets, seeds, strict=True)],
                        dtype=np.float64)

    info = {"dpmm": metadata.version("dpmm"), "opendp": metadata.version("opendp"),
            "pipeline": type(template).__name__,
            "generator": type(generator).__name__,
            "rho": float(generator.rho), "sigma": float(getattr(generator, "sigma", np.nan)),
            "binner": template.proc.binner_type}
    return release, info
