"""Tests for audit.enums: every choice parses its string values at the boundary and refuses
the rest with a message naming the parameter and the allowed values.
"""

from __future__ import annotations

import json

import pytest

from audit import enums
from audit.enums import (
    AuditMode,
    Backend,
    BoundRule,
    Calibration,
    CeilingKind,
    Choice,
    CurveFamily,
    Direction,
    MaskRegime,
    MissingnessClass,
    NoiseKind,
    PairFamily,
    Selection,
    SideDesign,
    StopRule,
    StrataBy,
    StrataSides,
    TradeoffOrder,
)

ALL = [NoiseKind, MissingnessClass, Calibration, Selection, Direction, BoundRule, TradeoffOrder,
       Backend,
       AuditMode, CeilingKind, MaskRegime, StopRule, StrataBy, StrataSides, SideDesign,
       PairFamily, CurveFamily]


def test_all_lists_every_choice():
    assert set(enums.__all__) == {"Choice"} | {cls.__name__ for cls in ALL}
    assert all(issubclass(cls, Choice) for cls in ALL)


@pytest.mark.parametrize("cls", ALL)
def test_each_value_and_member_parses_to_its_member(cls):
    for member in cls:
        assert cls.parse(member) is member
        assert cls.parse(member.value) is member
        assert cls.parse(member.value.upper()) is member  # case-insensitive
        assert member == member.value and str(member) == member.value


@pytest.mark.parametrize(("cls", "name"), [
    (NoiseKind, "noise"), (MissingnessClass, "missingness_class"),
    (Calibration, "calibration"), (Selection, "selection"), (Direction, "direction"),
    (TradeoffOrder, "orders"), (Backend, "backend"), (AuditMode, "auditmode"),
])
def test_a_bad_value_names_the_parameter_and_the_allowed_values(cls, name):
    allowed = ", ".join(repr(m.value) for m in cls)
    with pytest.raises(ValueError) as err:
        cls.parse("no-such-choice")
    assert str(err.value) == f"{name} must be one of {allowed}, got {name}='no-such-choice'"
    with pytest.raises(ValueError, match=r"^given must be one of"):
        cls.parse(3, "given")


def test_members_serialise_as_their_values():
    doc = {"noise": NoiseKind.GAUSSIAN, "orders": [TradeoffOrder.P_Q, TradeoffOrder.Q_P]}
    assert json.loads(json.dumps(doc)) == {"noise": "gaussian", "orders": ["T(P,Q)", "T(Q,P)"]}


def test_choices_of_different_enums_do_not_mix():
    with pytest.raises(ValueError, match="noise must be one of"):
        NoiseKind.parse(Selection.MODEL)
    assert Selection.parse(Selection.MODEL.value) is Selection.MODEL
