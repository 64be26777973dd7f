"""``multirelease describe NAME`` explains every parameter of every registered publisher and attack (issue 25,
item 7: ``describe m_invariance`` once left ``m`` unexplained): the entry's parameter table has one row per
declared parameter and the row's meaning is not empty."""
from __future__ import annotations

import pytest

from attacks import ATTACKS
from multirelease.reports import reference
from publishers import PUBLISHERS


def _parameter_rows(text: str) -> dict[str, list[str]]:
    """The rows of the entry's parameter table: name -> its cells (type and range, default, meaning)."""
    head = "| parameter | type and range | default | meaning |"
    assert head in text, text[:400]
    rows: dict[str, list[str]] = {}
    for line in text.split(head, 1)[1].splitlines()[2:]:
        if not line.startswith("| `"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        rows[cells[0].strip("`")] = cells[1:]
    return rows


@pytest.mark.parametrize("kind, name", [("publisher", n) for n in sorted(PUBLISHERS)]
                         + [("attack", n) for n in sorted(ATTACKS)])
def test_describe_explains_every_parameter(kind, name):
    registry = PUBLISHERS if kind == "publisher" else ATTACKS
    params = registry[name].params
    text = reference.describe(name)
    if not params:
        assert "No parameters." in text
        return
    rows = _parameter_rows(text)
    for param in params:
        assert param in rows, f"{kind} {name}: parameter '{param}' is not in `describe {name}`"
        meaning = rows[param][-1]
        assert len(meaning.split()) >= 3, f"{kind} {name}: parameter '{param}' is not explained ({meaning!r})"


def test_a_parameter_without_description_is_reported(monkeypatch):
    """The reference's guard names a parameter listed in the docstring without words."""
    cls = PUBLISHERS["m_invariance"]
    monkeypatch.setattr(cls, "__doc__", "An m-invariant publisher.\n\nParameters\n----------\nm : int >= 2\n"
                        "uid : bool, default False\n    Publish a uid column.\n")
    missing = reference.missing_entries()
    assert "publisher m_invariance: parameter 'm' has no description in its docstring's Parameters" in missing
