"""``expect`` lines / certification requirements: parsing, and judging on the interval a metric lies in.

An expectation holds when every value of the interval satisfies it, fails when none does, and is unknown
otherwise (multirelease/expect.py).
"""
from __future__ import annotations

import math

import pytest

from multirelease.errors import InputError
from multirelease.expect import OPS, Expectation, parse_expectation


# ---------------------------------------------------------------------- parsing
@pytest.mark.parametrize("text, subject, index, metric, op, number", [
    ("linking.k >= 10", "linking", None, "k", ">=", 10.0),
    ("correspondence.FA == 4", "correspondence", None, "FA", "==", 4.0),
    ("possible_worlds.max_breach <= 3/4", "possible_worlds", None, "max_breach", "<=", 0.75),
    ("possible_worlds.max_breach <= 3 / 4", "possible_worlds", None, "max_breach", "<=", 0.75),
    ("possible_worlds.max_linkage < 1/3", "possible_worlds", None, "max_linkage", "<", 1 / 3),
    ("release[2].LM < 0.4", "release", 2, "LM", "<", 0.4),
    ("release[1].records == 30162", "release", 1, "records", "==", 30162.0),
    ("  linking.k>=2  ", "linking", None, "k", ">=", 2.0),
    ("linking.k\t>=\t2", "linking", None, "k", ">=", 2.0),
    ("linking.alpha <= 1e-3", "linking", None, "alpha", "<=", 1e-3),
    ("linking.alpha <= 2.5E+2", "linking", None, "alpha", "<=", 250.0),
    ("linking.alpha <= 1.5e2/3", "linking", None, "alpha", "<=", 50.0),
    ("linking.alpha > .5", "linking", None, "alpha", ">", 0.5),
    ("linking.alpha > 5.", "linking", None, "alpha", ">", 5.0),
    ("linking.alpha != -1", "linking", None, "alpha", "!=", -1.0),
    ("linking.alpha > -3/4", "linking", None, "alpha", ">", -0.75),
    ("linking.alpha > +2", "linking", None, "alpha", ">", 2.0),
    ("update_graph.vulnerable_values == 0", "update_graph", None, "vulnerable_values", "==", 0.0),
    ("_private.m_2 >= 0", "_private", None, "m_2", ">=", 0.0),
])
def test_parse_valid_forms(text, subject, index, metric, op, number):
    e = parse_expectation(text)
    assert isinstance(e, Expectation)
    assert (e.subject, e.index, e.metric, e.op) == (subject, index, metric, op)
    assert math.isclose(e.number, number, rel_tol=1e-15, abs_tol=0)
    assert e.text == text.strip()


@pytest.mark.parametrize("op", sorted(OPS))
def test_parse_every_op_with_and_without_spaces(op):
    assert parse_expectation(f"linking.k {op} 2").op == op
    assert parse_expectation(f"linking.k{op}2").op == op


def test_fraction_is_exact_before_conversion():
    # 1/3 is converted once, from an exact Fraction: the same float Python gives for 1/3
    assert parse_expectation("possible_worlds.max_breach <= 1/3").number == 1 / 3
    assert parse_expectation("possible_worlds.max_breach <= 2/6").number == 1 / 3


@pytest.mark.parametrize("text", [
    "linking.k",
    "linking.k >=",
    "linking.k >= ",
    ">= 2",
    "linking >= 2",
    "linking.k => 2",
    "linking.k = 2",
    "linking.k =< 2",
    "linking.k >== 2",
    "linking.k >= ten",
    "linking.k >= 2 3",
    "linking.k >= 2/",
    "linking.k >= /2",
    "linking.k >= 1/2/3",
    "linking.k >= 1/2.5",
    "linking.k >= inf",
    "linking.k >= nan",
    "linking.k >= 0x10",
    "linking..k >= 2",
    "linking.k.x >= 2",
    "2linking.k >= 2",
    "link ing.k >= 2",
    "release[].LM < 1",
    "release[a].LM < 1",
    "",
])
def test_parse_rejects(text):
    with pytest.raises(InputError) as info:
        parse_expectation(text, file="s.yaml", key="expect[3]")
    err = info.value
    assert err.file == "s.yaml" and err.key == "expect[3]"
    assert "cannot parse" in err.problem
    assert err.one_line().startswith("s.yaml: expect[3]: ")
    assert "\n" not in err.one_line()


@pytest.mark.parametrize("text, words", [
    ("release.LM < 1", "release[<i>]"),
    ("linking[1].k >= 2", "release[<i>]"),
    ("linking.alpha <= 1/0", "division by zero"),
    ("linking.alpha <= 1 / 0", "division by zero"),
])
def test_parse_rejects_with_a_reason(text, words):
    with pytest.raises(InputError) as info:
        parse_expectation(text, file="s.yaml", key="expect[0]")
    assert words in info.value.problem
    assert info.value.key == "expect[0]"


@pytest.mark.parametrize("value", [None, 5, 2.0, ["linking.k >= 2"], {"linking.k": 2}])
def test_parse_rejects_non_strings(value):
    with pytest.raises(InputError) as info:
        parse_expectation(value, file="s.yaml", key="expect[0]")
    assert "must be a string" in info.value.problem


# ---------------------------------------------------------------------- judging a point
def ex(op: str, number: float = 0.5) -> Expectation:
    return parse_expectation(f"a.m {op} {number}")


@pytest.mark.parametrize("op, below, equal, above", [
    ("<", True, False, False),
    ("<=", True, True, False),
    ("==", False, True, False),
    ("!=", True, False, True),
    (">=", False, True, True),
    (">", False, False, True),
])
def test_judge_exact_point_truth_table(op, below, equal, above):
    e = ex(op)
    for value, want in ((0.25, below), (0.5, equal), (0.75, above)):
        assert e.judge(value, value) is want, (op, value)
        assert e.check(value) is want, (op, value)


def test_equality_has_a_relative_tolerance():
    e = parse_expectation("a.m == 1/3")
    assert e.judge(0.3333333333333333, 0.3333333333333333) is True
    assert e.judge(1 / 3 * (1 + 1e-12), 1 / 3 * (1 + 1e-12)) is True
    assert e.judge(1 / 3 * (1 + 1e-6), 1 / 3 * (1 + 1e-6)) is False
    assert parse_expectation("a.m != 1/3").judge(1 / 3 * (1 + 1e-12), 1 / 3 * (1 + 1e-12)) is False
    assert parse_expectation("a.m == 0").judge(1e-15, 1e-15) is True


def test_check_of_missing_values_is_false():
    assert ex(">=").check(None) is False
    assert ex("<=").check(float("nan")) is False
    assert ex("!=").check(float("nan")) is False


# ---------------------------------------------------------------------- judging an interval
# interval [0.4, 0.6] against thresholds below it (0.3), inside it (0.5), at its ends, and above it (0.7)
@pytest.mark.parametrize("op, threshold, want", [
    # < : true only when the whole interval is below
    ("<", 0.7, True), ("<", 0.6, None), ("<", 0.5, None), ("<", 0.4, False), ("<", 0.3, False),
    # <=
    ("<=", 0.7, True), ("<=", 0.6, True), ("<=", 0.5, None), ("<=", 0.4, None), ("<=", 0.3, False),
    # >
    (">", 0.3, True), (">", 0.4, None), (">", 0.5, None), (">", 0.6, False), (">", 0.7, False),
    # >=
    (">=", 0.3, True), (">=", 0.4, True), (">=", 0.5, None), (">=", 0.6, None), (">=", 0.7, False),
    # == can never be settled true by a proper interval; false when the number is outside it
    ("==", 0.3, False), ("==", 0.4, None), ("==", 0.5, None), ("==", 0.6, None), ("==", 0.7, False),
    # != is settled true when the number is outside, unknown when inside
    ("!=", 0.3, True), ("!=", 0.4, None), ("!=", 0.5, None), ("!=", 0.6, None), ("!=", 0.7, True),
])
def test_judge_interval_truth_table(op, threshold, want):
    assert ex(op, threshold).judge(0.4, 0.6) is want


@pytest.mark.parametrize("op", sorted(OPS))
def test_judge_interval_agrees_with_every_point(op):
    """Settled verdicts agree with every point of the interval; unknown means the points disagree."""
    grid = [i / 20 for i in range(21)]
    for threshold in (0.2, 0.4, 0.45, 0.5, 0.6, 0.8):
        e = ex(op, threshold)
        for low in grid:
            for high in grid:
                if high < low:
                    continue
                points = {e.check(low), e.check(high), e.check((low + high) / 2), e.check(threshold)
                          if low <= threshold <= high else e.check(low)}
                verdict = e.judge(low, high)
                if verdict is None:
                    assert points == {True, False}, (op, threshold, low, high)
                else:
                    assert points == {verdict}, (op, threshold, low, high, verdict)


def test_degenerate_interval_is_a_point():
    e = ex("<=", 0.5)
    assert e.judge(0.5, 0.5 + 1e-13) is True
    assert ex("==", 0.5).judge(0.5, 0.5 * (1 + 1e-12)) is True
