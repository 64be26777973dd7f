"""Information-loss metrics on tiny hand-computed releases, and the theorems of Barbosa et al. section 5."""
from __future__ import annotations

import time
from math import log2
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from multirelease.errors import InputError
from multirelease.model.metrics import (average_information_loss, discernibility, discernibility_normalized,
                                  entropy_metric, fem, leaf_frequencies, loss_metric, release_metrics, vem)
from multirelease.model.release import Release
from multirelease.formats.release_csv import release_from_frame
from multirelease.model.schema import Schema
from multirelease.model.table import Table
from publishers.mondrian import Mondrian

# age: 10 leaves 20..29 (intervals); country: 5 leaves UK, France, Germany | US, Canada (taxonomy);
# color: 4 leaves r, g, b, y (arbitrary subsets).  |A| - 1 = 9, 4, 3.
SPEC = {"attributes": {
    "age": {"role": "quasi", "hierarchy": {"numeric": {"min": 20, "max": 29}}},
    "country": {"role": "quasi", "hierarchy": {"Europe": ["UK", "France", "Germany"], "America": ["US", "Canada"]}},
    "color": {"role": "quasi", "hierarchy": ["r", "g", "b", "y"], "generalization": "subsets"},
    "disease": {"role": "sensitive"},
}}


@pytest.fixture(scope="module")
def schema() -> Schema:
    return Schema.from_mapping(SPEC, base=Path("."))


def make(schema, rows, columns=("age", "country", "color", "disease"), counterfeits=None) -> Release:
    return release_from_frame(schema, pd.DataFrame(rows, columns=list(columns), dtype=str),
                              counterfeits=counterfeits)


ROWS4 = [
    ["[20,24]", "Europe", "{r,g}", "flu"],   # 4/9 + 2/4 + 1/3 = 23/18
    ["22", "UK", "r", "flu"],                # 0
    ["*", "*", "*", "cold"],                 # 3
    ["[25,29]", "America", "{g,b,y}", "hiv"],  # 4/9 + 1/4 + 2/3 = 49/36
]

# three published groups: A (3 rows), B (2 rows), C (1 row)
ROWS6 = [
    ["1", "[20,24]", "Europe", "{r,g}", "flu"],
    ["1", "[20,24]", "Europe", "{r,g}", "cold"],
    ["1", "[20,24]", "Europe", "{r,g}", "flu"],
    ["2", "[25,29]", "*", "{r,y}", "hiv"],
    ["2", "[25,29]", "*", "{r,y}", "flu"],
    ["3", "27", "US", "b", "cold"],
]
COLS6 = ("group", "age", "country", "color", "disease")


# ---------------------------------------------------------------------- LM
def test_loss_metric_hand_computed(schema):
    r = make(schema, ROWS4)
    # row penalties 23/18 + 0 + 3 + 49/36 = 203/36, over 4 records x 3 QIs
    assert_allclose(loss_metric(r), 203 / 36 / 12)


def test_loss_metric_unpublished_attribute(schema):
    r = make(schema, [row[:2] + row[3:] for row in ROWS4], columns=("age", "country", "disease"))
    # published penalties 17/18 + 0 + 2 + 25/36 = 131/36; color unpublished: 4 entries of penalty 1
    assert_allclose(loss_metric(r, unpublished="suppressed"), (131 / 36 + 4) / 12)
    # default: left out of the average (Shmueli & Tassa, section 6)
    assert_allclose(loss_metric(r), 131 / 36 / 8)


def test_loss_metric_suppressed_records(schema):
    r = make(schema, ROWS4)
    # two more records in T, both fully suppressed: 2 x 3 extra penalty, 6 x 3 entries
    assert_allclose(loss_metric(r, original_size=6), (203 / 36 + 6) / 18)
    with pytest.raises(InputError, match="more than the 3"):
        loss_metric(r, original_size=3)


def test_loss_metric_extremes(schema):
    raw = make(schema, [["21", "UK", "r", "flu"], ["29", "Canada", "y", "flu"]])
    top = make(schema, [["*", "*", "*", "flu"], ["*", "*", "*", "flu"]])
    assert loss_metric(raw) == 0.0
    assert_allclose(loss_metric(top), 1.0)


# ---------------------------------------------------------------------- EM
@pytest.fixture(scope="module")
def snapshot(schema) -> Table:
    # country: UK 3, France 1, Germany 1, US 2, Canada 1; color: r 4, g 2, b 1, y 1 (8 records)
    rows = [
        [21, "UK", "r", "flu"], [22, "UK", "r", "flu"], [23, "UK", "g", "flu"], [24, "France", "r", "flu"],
        [25, "Germany", "r", "flu"], [26, "US", "g", "flu"], [27, "US", "b", "flu"], [28, "Canada", "y", "flu"],
    ]
    return Table.from_rows(schema, rows)


def test_leaf_frequencies(snapshot):
    f = leaf_frequencies(snapshot)
    assert_allclose(f["country"], [3 / 8, 1 / 8, 1 / 8, 2 / 8, 1 / 8])
    assert_allclose(f["color"], [4 / 8, 2 / 8, 1 / 8, 1 / 8])
    assert_allclose(f["age"], [0] + [1 / 8] * 8 + [0])


def test_entropy_metric_hand_computed(schema, snapshot):
    rows = [["Europe", "{r,b}", "flu"], ["UK", "r", "flu"], ["*", "*", "flu"], ["America", "{g,y}", "flu"]]
    r = make(schema, rows, columns=("country", "color", "disease"))
    h_europe = -(0.6 * log2(0.6) + 2 * 0.2 * log2(0.2))          # UK 3/5, France 1/5, Germany 1/5
    h_country = -(3 / 8 * log2(3 / 8) + 3 * (1 / 8) * log2(1 / 8) + 2 / 8 * log2(2 / 8))
    h_america = -(2 / 3 * log2(2 / 3) + 1 / 3 * log2(1 / 3))     # US 2/3, Canada 1/3
    h_rb = -(0.8 * log2(0.8) + 0.2 * log2(0.2))                  # r 4/5, b 1/5 (not g: a set, not a range)
    h_color = 0.5 + 0.5 + 2 * 0.375                              # r 1/2, g 1/4, b 1/8, y 1/8
    h_gy = h_america                                             # g 2/3, y 1/3
    published = h_europe + h_country + h_america + h_rb + h_color + h_gy
    # ignore the unpublished age: 4 records x 2 QIs
    assert_allclose(entropy_metric(r, leaf_frequencies(snapshot)), published / 8)
    # age unpublished = suppressed: entropy of its 8 equally frequent observed values, 3 bits per record
    assert_allclose(entropy_metric(r, leaf_frequencies(snapshot), unpublished="suppressed"),
                    (published + 4 * 3.0) / 12)


def test_entropy_metric_interval_and_raw(schema, snapshot):
    freq = leaf_frequencies(snapshot)
    r = make(schema, [["[20,23]", "UK", "r", "flu"], ["24", "UK", "r", "flu"]])
    # [20,23] holds 21, 22, 23 (20 never occurs): uniform over 3 -> log2 3; everything else is exact
    assert_allclose(entropy_metric(r, freq), log2(3) / 6)
    raw = make(schema, [["21", "UK", "r", "flu"]])
    assert entropy_metric(raw, freq) == 0.0


# ---------------------------------------------------------------------- discernibility, AIL
def test_discernibility(schema):
    r = make(schema, ROWS6, columns=COLS6)
    assert discernibility(r) == 3 ** 2 + 2 ** 2 + 1 ** 2
    assert_allclose(discernibility_normalized(r), 14 / 36)
    # without a group column, identical QI values form a class: same classes here
    no_group = make(schema, [row[1:] for row in ROWS6])
    assert discernibility(no_group) == 14


def test_average_information_loss_hand_computed(schema):
    r = make(schema, ROWS6, columns=COLS6)
    # A: 3 * (4/9 + 2/4 + 1/3);  B: 2 * (4/9 + 4/4 + 3/3) ({r,y} spans codes 0..3);  C: 0;  over 6 records
    assert_allclose(average_information_loss(r), (3 * (4 / 9 + 1 / 2 + 1 / 3) + 2 * (4 / 9 + 2)) / 6)
    # one suppressed record adds 3 (every QI fully generalized), over 7 records
    assert_allclose(average_information_loss(r, original_size=7),
                    (3 * (4 / 9 + 1 / 2 + 1 / 3) + 2 * (4 / 9 + 2) + 3) / 7)


# ---------------------------------------------------------------------- FEM, VEM
def test_fem_vem_hand_computed(schema):
    r = make(schema, ROWS6, columns=COLS6)
    assert_allclose(fem(r), -(3 / 6 * log2(3 / 6) + 2 / 6 * log2(2 / 6) + 1 / 6 * log2(1 / 6)))
    # V(T) = 10 * 5 * 4 = 200; V(A) = 5 * 3 * 2 = 30, V(B) = 5 * 5 * 2 = 50 ({r,y}: 2 values), V(C) = 1
    assert_allclose(vem(r), 3 / 6 * log2(200 / 30) + 2 / 6 * log2(200 / 50) + 1 / 6 * log2(200))


def _raw_and_top(schema, n=12, seed=3):
    rng = np.random.default_rng(seed)
    ages = rng.choice(np.arange(20, 30), n)
    countries = rng.choice(["UK", "France", "Germany", "US", "Canada"], n)
    colors = rng.choice(list("rgby"), n)
    raw = make(schema, [[str(i + 1), str(a), c, col, "flu"]
                        for i, (a, c, col) in enumerate(zip(ages, countries, colors))],
               columns=COLS6)
    top = make(schema, [["1", "*", "*", "*", "flu"]] * n, columns=COLS6)
    return raw, top


def test_theorem_1_bounds_attained(schema):
    raw, top = _raw_and_top(schema)
    # the raw table (each record its own class): FEM = log|T|, VEM = log V(T); fully generalized: both 0
    assert_allclose(fem(raw), log2(12))
    assert_allclose(vem(raw), log2(200))
    assert fem(top) == 0.0
    assert vem(top) == 0.0
    assert_allclose(average_information_loss(top), 3.0)
    assert average_information_loss(raw) == 0.0


def test_theorem_3_vem_additivity(schema):
    rng = np.random.default_rng(7)
    n = 60
    snap = Table.from_rows(schema, [[int(rng.integers(20, 30)),
                                     str(rng.choice(["UK", "France", "Germany", "US", "Canada"])),
                                     str(rng.choice(list("rgby"))), str(rng.choice(["flu", "cold", "hiv"]))]
                                    for _ in range(n)])
    r = Mondrian(k=4).publish(snap, rng=np.random.default_rng(0)).release
    frame = r.to_frame()
    parts = [vem(release_from_frame(schema, frame[["group", q, "disease"]])) for q in ("age", "country", "color")]
    total = vem(r)
    assert total > 0
    assert all(p >= 0 for p in parts)
    assert_allclose(total, sum(parts))


def test_suppression_lowers_fem_and_vem(schema):
    full = make(schema, ROWS6, columns=COLS6)
    without_c = make(schema, ROWS6[:5], columns=COLS6)  # class C suppressed; |T| stays 6
    assert_allclose(fem(without_c, original_size=6), -(3 / 6 * log2(3 / 6) + 2 / 6 * log2(2 / 6)))
    assert fem(without_c, original_size=6) < fem(full)
    assert vem(without_c, original_size=6) < vem(full)
    # classes of 1, 1 and 98 records; suppressing the 98 would *raise* the plain FEM (1 bit, two classes
    # of one), while FEM(R, T) keeps the suppressed records with information 0 (Theorem 2)
    rows = [[str(g), "*", "*", "*", "flu"] for g in [1, 2] + [3] * 98]
    before = make(schema, rows, columns=COLS6)
    after = make(schema, rows[:2], columns=COLS6)
    assert_allclose(fem(before), -(2 * 0.01 * log2(0.01) + 0.98 * log2(0.98)))
    assert_allclose(fem(after), 1.0)
    assert_allclose(fem(after, original_size=100), -2 * 0.01 * log2(0.01))
    assert fem(after, original_size=100) < fem(before) < fem(after)


def test_counterfeits_lower_fem(schema):
    base = make(schema, ROWS6, columns=COLS6)
    fake = ["2", "[25,29]", "*", "{r,y}", "cold"]
    with_fake = make(schema, ROWS6 + [fake], columns=COLS6, counterfeits={2: 1})
    # FEM': |E| real records over |T| + |F(R)| = 7, log of (rows of E) / |T| = 6
    expected = -(3 / 7 * log2(3 / 6) + 2 / 7 * log2(3 / 6) + 1 / 7 * log2(1 / 6))
    assert_allclose(fem(with_fake), expected)
    assert fem(with_fake) < fem(base)
    # VEM': same volumes, the weights shrink by 6/7
    assert_allclose(vem(with_fake), vem(base) * 6 / 7)
    with pytest.raises(InputError):
        fem(make(schema, ROWS6, columns=COLS6, counterfeits={3: 2}))


def test_release_metrics_keys_and_speed(schema, snapshot):
    r = make(schema, ROWS6, columns=COLS6)
    m = release_metrics(r)
    assert set(m) == {"LM", "discernibility", "discernibility_normalized", "AIL", "FEM", "VEM"}
    assert_allclose(m["FEM"], fem(r))
    assert "EM" in release_metrics(r, snapshot)
    # a 30,162-row release of 4,000 classes, built directly
    rng = np.random.default_rng(1)
    n, n_classes = 30_162, 4_000
    cls = rng.integers(0, n_classes, n)
    lo_c = np.column_stack([rng.integers(0, 5, n_classes), rng.integers(0, 3, n_classes),
                            rng.integers(0, 2, n_classes)])
    width = np.column_stack([rng.integers(0, 5, n_classes), np.zeros(n_classes, int), rng.integers(0, 2, n_classes)])
    lo = lo_c[cls].astype(np.int32)
    hi = (lo_c + width)[cls].astype(np.int32)
    masks = {"color": (((np.uint64(1) << (hi[:, 2] - lo[:, 2] + 1).astype(np.uint64)) - np.uint64(1))
                       << lo[:, 2].astype(np.uint64))}
    big = Release(schema=schema, attributes=("age", "country", "color", "disease"), lo=lo, hi=hi,
                  sensitive=np.full(n, "flu", dtype=object), masks=masks, group=cls + 1)
    t0 = time.perf_counter()
    m = release_metrics(big)
    elapsed = time.perf_counter() - t0
    assert elapsed < 0.5
    assert_allclose(m["discernibility"], float((np.bincount(cls) ** 2).sum()))
    assert 0 < m["LM"] < 1
