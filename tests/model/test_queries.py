import numpy as np
import pytest

from audit.model.queries import QUERY_KINDS, make_query
from audit.theory import fwl

X = np.array([[0.5, -1.0, np.nan], [1.0, 0.25, -0.5]])
X0 = np.nan_to_num(X)
A = np.array([[1.0, 0.0, 2.0], [0.5, -1.0, 0.0]])
Q = {
    "sum": ({}, np.array([X0.sum()])),
    "linear": ({"weights": [1.0, 2.0, 3.0]}, np.array([(X0 @ [1.0, 2.0, 3.0]).sum()])),
    "vector-sum": ({}, X0.sum(0)),
    "bounded-mean": ({}, X0.mean(0)),
    "clipped-mean": ({"clip": 0.4}, np.clip(X0, -0.4, 0.4).mean(0)),
    "histogram": ({}, X0.sum(0)),
    "second-moment": ({}, (X0.T @ X0 / 2).reshape(-1)),
    "projected-mean": ({"A": A}, A @ X0.mean(0)),
}


def test_every_query_has_a_case():
    assert set(Q) == set(QUERY_KINDS)


@pytest.mark.parametrize("name", sorted(Q))
def test_evaluate(name):
    params, expected = Q[name]
    q = make_query(name, **params)
    out = q.evaluate(X)
    assert out.shape == (q.output_dim(3),)
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    np.testing.assert_allclose(q.contributions(X, 2).sum(0), out, rtol=1e-12)
    # An all-NA record contributes nothing.
    np.testing.assert_allclose(q.contributions(np.full((1, 3), np.nan), 2), 0.0)


def test_fwl_delegation():
    assert make_query("sum").fwl_constants(5, 3, 1.0) == fwl.sum_query(3)
    assert make_query("second-moment").fwl_constants(5, 3, 2.0) == fwl.second_moment(5, 3,
                                                                                     bound=2.0)
    assert make_query("projected-mean", A=A).fwl_constants(4, 3, 1.0) == fwl.projected_mean(4, A)
    assert make_query("clipped-mean", clip=0.3).fwl_constants(4, 3, 9.0) == fwl.clipped_mean(
        4, 3, 0.3)
    assert make_query("linear", weights=A, norm=2).fwl_constants(4, 3, 1.0) == fwl.linear(A, 2)


def test_errors():
    with pytest.raises(ValueError, match="query must be one of"):
        make_query("mean")
    with pytest.raises(ValueError, match="unknown parameter 'clp'"):
        make_query("clipped-mean", clp=1.0)
    with pytest.raises(ValueError, match="clip must be in"):
        make_query("clipped-mean", clip=-1.0)
    with pytest.raises(ValueError, match="d must equal A.shape"):
        make_query("projected-mean", A=A).evaluate(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="x must have shape"):
        make_query("sum").evaluate(np.zeros(3))
    with pytest.raises(ValueError, match="query 'linear'"):
        make_query("linear")


def test_every_catalogue_query_satisfies_the_protocol():
    from audit.protocols import Query

    examples = {"linear": {"weights": [1.0, 2.0]}, "projected-mean": {"A": [[1.0, 0.0]]}}
    for name in QUERY_KINDS:
        assert isinstance(make_query(name, **examples.get(name, {})), Query), name
