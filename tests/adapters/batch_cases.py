"""Cases the batched forms of the libraries (PipelineDP, OpenDP Polars) share: a stack of the
wrong shape is refused, and a batch whose releases share one library noise draw fails
:mod:`audit.model.batch_check` and is refused by the audit."""

from __future__ import annotations

import numpy as np
import pytest

from audit.model import batch_check
from audit.model.batch_check import check_batch
from audit.model.implementation import CallableImplementation


def assert_bad_stacks_are_refused(make_impl) -> None:
    """``make_impl(function, **extra)``: a stack that is not (m, n, d) and a column the
    datasets lack are refused, naming them."""
    with pytest.raises(ValueError, match="datasets must have shape"):
        make_impl("sum").batch(np.zeros((3, 4)), None)
    with pytest.raises(ValueError, match="column"):
        make_impl("sum", column=5).batch(np.zeros((2, 3, 2)), None)


def assert_shared_noise_is_refused(impl, exact, data: np.ndarray) -> None:
    """A fake batch that makes one release of ``impl`` and shifts it by each dataset's
    ``exact`` value: every dataset shares the library's noise draw. Fails the correlation and
    permutation tests (p < 10⁻¹⁰), and the audit calls it one dataset at a time."""
    def shared(datasets, rng):
        noise = impl(datasets[0], rng) - exact(datasets[0])
        return np.array([exact(d) for d in datasets]) + noise

    fake = CallableImplementation(impl.func, impl.claim, f"{impl.name} (shared noise)",
                                  batch_func=shared, batch_in_one_call=True)
    result = check_batch(fake, data)
    assert {"correlation", "permutation"} <= set(result.failed), result.describe()
    with pytest.warns(batch_check.BatchRefused):
        out, _ = batch_check.checked(fake, data)
    assert out.batch is None
    batch_check.clear_cache()
