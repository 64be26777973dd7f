"""The single-release checks (``linking``): hand-computed figures, a brute-force cross-check, and Mondrian
releases on Adult."""
from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from attacks import ATTACKS, AttackResult
from attacks.linking import Linking
from multirelease.errors import InputError
from multirelease.formats.release_csv import release_from_frame
from multirelease.model.schema import Schema
from multirelease.model.sequence import SequenceView
from multirelease.model.table import Table, read_table
from publishers.mondrian import Mondrian

ADULT = Path(__file__).parents[1].parent.parent / "shared/data/adult"

SPEC = {"attributes": {
    "age": {"role": "quasi", "hierarchy": {"numeric": {"min": 20, "max": 29}}},
    "country": {"role": "quasi", "hierarchy": {"Europe": ["UK", "France", "Germany"], "America": ["US", "Canada"]}},
    "disease": {"role": "sensitive"},
}}


@pytest.fixture(scope="module")
def schema() -> Schema:
    return Schema.from_mapping(SPEC, base=Path("."))


def release(schema, rows, counterfeits=None):
    frame = pd.DataFrame(rows, columns=["group", "age", "country", "disease"], dtype=str)
    return release_from_frame(schema, frame, counterfeits=counterfeits)


# group 1: flu, flu, cold      size 3, distinct 2, alpha 2/3, exp(H) = 3 / 2^(2/3)
# group 2: flu, hiv            size 2, distinct 2, alpha 1/2, exp(H) = 2
# group 3: cancer x3, cold     size 4, distinct 2, alpha 3/4, exp(H) = 4 / 3^(3/4)
ROWS = [
    ["1", "[20,24]", "Europe", "flu"], ["1", "[20,24]", "Europe", "flu"], ["1", "[20,24]", "Europe", "cold"],
    ["2", "[25,29]", "America", "flu"], ["2", "[25,29]", "America", "hiv"],
    ["3", "[25,29]", "Europe", "cancer"], ["3", "[25,29]", "Europe", "cancer"],
    ["3", "[25,29]", "Europe", "cancer"], ["3", "[25,29]", "Europe", "cold"],
]
# exp(-(2/3 ln 2/3 + 1/3 ln 1/3)) = 3 / 2^(2/3);  exp(-(3/4 ln 3/4 + 1/4 ln 1/4)) = 4 / 3^(3/4)
L_ENT_1 = 3 / 2 ** (2 / 3)
L_ENT_3 = 4 / 3 ** 0.75


def test_registry_and_params():
    assert ATTACKS["linking"] is Linking
    with pytest.raises(InputError, match="must be an int in \\[2, inf\\)"):
        Linking(k=1)
    with pytest.raises(InputError, match="alpha"):
        Linking(alpha=0.0)
    with pytest.raises(InputError, match="l_kind"):
        Linking(l_kind="recursive")


def test_hand_computed_release(schema):
    r = release(schema, ROWS)
    out = Linking().run(SequenceView((r,)))
    assert isinstance(out, AttackResult) and out.exact
    s = out.summary
    assert s["k"] == 2
    assert s["l_distinct"] == 2
    assert_allclose(s["l_entropy"], L_ENT_3)
    assert_allclose(s["alpha"], 3 / 4)
    assert_allclose(s["prosecutor_max"], 1 / 2)
    assert_allclose(s["prosecutor_avg"], 3 / 9)  # (3 * 1/3 + 2 * 1/2 + 4 * 1/4) / 9
    assert "violations" not in s
    w = out.worst["k"]
    assert (w["release"], w["group"], w["size"]) == (1, 2, 2)
    assert w["sensitive"] == {"flu": 1, "hiv": 1}
    assert w["qi"] == {"age": "[25,29]", "country": "America"}
    assert out.targets[0]["classes"] == 3 and out.targets[0]["records"] == 9
    # the report is plain JSON
    assert json.loads(json.dumps(out.to_json()))["worst"]["k"]["size"] == 2


@pytest.mark.parametrize("params, violations, witness_group", [
    ({"k": 3}, 1, 2),                                  # group 2 has 2 records
    ({"k": 3, "l": 2}, 1, 2),
    ({"l": 3}, 3, 1),                                  # every group has 2 distinct values
    ({"l": 1.8, "l_kind": "entropy"}, 1, 3),           # 4 / 3^(3/4) = 1.755 < 1.8 <= 1.89, 2
    ({"alpha": 0.7}, 1, 3),                            # 3/4 > 0.7
    ({"k": 3, "alpha": 0.7}, 2, 2),
])
def test_violations(schema, params, violations, witness_group):
    out = Linking(**params).run(SequenceView((release(schema, ROWS),)))
    assert out.summary["violations"] == violations
    assert out.worst["violation"]["group"] == witness_group


def test_entropy_witness_and_worst_over_releases(schema):
    r1 = release(schema, ROWS)
    r2 = release(schema, [["7", "20", "UK", "flu"], ["8", "*", "*", "flu"], ["8", "*", "*", "flu"]])
    out = Linking(l_kind="entropy").run(SequenceView((r1, r2)))
    assert out.summary["k"] == 1
    assert out.summary["l_distinct"] == 1
    assert_allclose(out.summary["l_entropy"], 1.0)
    assert out.summary["alpha"] == 1.0
    assert out.summary["prosecutor_max"] == 1.0
    assert_allclose(out.summary["prosecutor_avg"], 2 / 3)   # release 2: 2 classes over 3 records
    assert out.worst["k"]["release"] == 2 and out.worst["k"]["group"] == 7
    assert out.worst["k"]["qi"] == {"age": "20", "country": "UK"}
    assert out.worst["l"]["release"] == 2
    assert [t["k"] for t in out.targets] == [2, 1]
    assert_allclose(out.targets[0]["l_entropy"], L_ENT_3)
    # entropy witness on release 1 alone is group 3 (the lowest exp(H))
    alone = Linking(l_kind="entropy").run(SequenceView((r1,)))
    assert alone.worst["l"]["group"] == 3
    assert_allclose(alone.worst["l"]["l_entropy"], L_ENT_3)


def test_counterfeits_count_as_records(schema):
    rows = ROWS + [["2", "[25,29]", "America", "cold"]]
    out = Linking(k=3).run(SequenceView((release(schema, rows, counterfeits={2: 1}),)))
    assert out.summary["k"] == 3          # group 2 now shows 3 rows, one of them counterfeit
    assert out.summary["violations"] == 0
    assert out.summary["l_distinct"] == 2


def _brute_force(frame: pd.DataFrame, qi: list[str], sens: str) -> dict[str, float]:
    """Classes = identical QI text tuples (collections.Counter); figures straight from their definitions."""
    classes: dict[tuple, Counter] = defaultdict(Counter)
    for _, row in frame.iterrows():
        classes[tuple(row[q] for q in qi)][row[sens]] += 1
    sizes = [sum(c.values()) for c in classes.values()]
    ent = []
    for c in classes.values():
        n = sum(c.values())
        ent.append(math.exp(-sum(v / n * math.log(v / n) for v in c.values())))
    n = len(frame)
    return {
        "k": min(sizes),
        "l_distinct": min(len(c) for c in classes.values()),
        "l_entropy": min(ent),
        "alpha": max(max(c.values()) / sum(c.values()) for c in classes.values()),
        "prosecutor_max": 1 / min(sizes),
        "prosecutor_avg": sum(1 / s for s in sizes for _ in range(s)) / n,
    }


def test_matches_brute_force_on_mondrian_release(schema):
    rng = np.random.default_rng(11)
    n = 300
    rows = [[int(rng.integers(20, 30)), str(rng.choice(["UK", "France", "Germany", "US", "Canada"])),
             str(rng.choice(["flu", "cold", "hiv", "cancer"], p=[0.4, 0.3, 0.2, 0.1]))] for _ in range(n)]
    snap = Table.from_rows(schema, rows)
    r = Mondrian(k=4, l=2).publish(snap, rng=np.random.default_rng(0)).release
    out = Linking(k=4, l=2).run(SequenceView((r,)))
    expected = _brute_force(r.to_frame(), ["age", "country"], "disease")
    for key, value in expected.items():
        assert_allclose(out.summary[key], value, err_msg=key)
    assert out.summary["violations"] == 0
    assert out.summary["k"] >= 4


@pytest.fixture(scope="module")
def adult() -> Table:
    qi = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass"]
    attrs = {n: {"role": "quasi", "hierarchy": {"file": f"adult_hierarchy_{n}.csv"}} for n in qi}
    attrs["occupation"] = {"role": "sensitive"}
    attrs["salary-class"] = {"role": "insensitive"}
    schema = Schema.from_mapping({"attributes": attrs}, base=ADULT)
    table = read_table(schema, {"file": "adult.csv", "separator": ";"}, base=ADULT, source=None, key="data")
    return table.subset(table.ids[:3000])


@pytest.mark.parametrize("k, l", [(5, 3), (10, 2)])
def test_mondrian_on_adult_meets_its_principle(adult, k, l):
    r = Mondrian(k=k, l=l).publish(adult, rng=np.random.default_rng(0)).release
    assert len(r) == 3000
    out = Linking(k=k, l=l).run(SequenceView((r,)))
    assert out.summary["k"] >= k
    assert out.summary["l_distinct"] >= l
    assert out.summary["violations"] == 0
    assert out.summary["prosecutor_max"] <= 1 / k
    # and the same release fails a stricter requirement, with a witness that shows it
    strict = Linking(k=out.summary["k"] + 1).run(SequenceView((r,)))
    assert strict.summary["violations"] >= 1
    assert strict.worst["violation"]["size"] == out.summary["k"]
