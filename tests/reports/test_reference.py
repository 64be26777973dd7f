"""The reference generated from the code (issue 15, item 3): every registered publisher, attack and metric,
every key the parsers accept and every exit code has an entry; the committed pages of docs/reference/ are
what the generator writes now (so they cannot go stale); ``multirelease describe`` prints the entries."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from attacks import ATTACKS
from attacks.base import AttackBase
from multirelease.reports import reference, reference_pages
from multirelease.cli import main
from multirelease.params import Interval
from multirelease.reports.document import RELEASE_METRICS
from publishers import PUBLISHERS
from publishers.base import PublisherBase

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_nothing_is_missing_from_the_reference():
    assert reference.missing_entries() == []


def test_committed_pages_are_what_the_code_generates():
    stale = reference_pages.stale_pages(DOCS)
    assert not stale, (f"docs/reference/{', '.join(stale)} differ from the code: run "
                       "`python -m multirelease.reports.reference_pages docs/` and commit the pages")


def test_every_registered_name_has_its_entry_in_the_pages():
    pages = {name: (DOCS / "reference" / name).read_text(encoding="utf-8") for name in reference_pages.PAGES}
    for name in PUBLISHERS:
        assert f"## `{name}`" in pages["publishers.md"], name
        assert PUBLISHERS[name].paper in pages["publishers.md"]
        for param, rule in PUBLISHERS[name].params.items():
            assert f"| `{param}` | {rule.describe()} |" in pages["publishers.md"], (name, param)
    for name in ATTACKS:
        assert f"## `{name}`" in pages["attacks.md"], name
        for metric in ATTACKS[name].metrics:
            assert f"`{name}.{metric}`" in pages["metrics.md"], (name, metric)
            described = ATTACKS[name].metric_descriptions[metric]
            assert re.sub(r"\s+", " ", described).replace("|", "\\|") in pages["metrics.md"]
    for metric in RELEASE_METRICS:
        assert f"| `{metric}` |" in pages["metrics.md"]
    for code in (0, 1, 2, 3):
        assert f"| `{code}` |" in pages["cli.md"]
    import multirelease

    for name in multirelease.__all__:
        assert f"## `multirelease.{name}`" in pages["python.md"], name


@pytest.fixture()
def fake_entries():
    """A publisher and an attack registered without paper, parameter docs or metric descriptions."""

    class Bare(PublisherBase):
        """A publisher whose docstring documents nothing."""

        name = "bare_publisher"
        params = {"k": Interval(int, 2, None)}

    class BareAttack(AttackBase):
        """An attack without metric descriptions.

        Parameters
        ----------
        t : int
            A documented parameter.
        """

        name = "bare_attack"
        paper = "somewhere"
        params = {"t": Interval(int, 1, None)}
        metrics = ("leak",)

    PUBLISHERS["bare_publisher"] = Bare
    ATTACKS["bare_attack"] = BareAttack
    try:
        yield
    finally:
        del PUBLISHERS["bare_publisher"]
        del ATTACKS["bare_attack"]


def test_a_registered_name_without_entry_is_found(fake_entries):
    """The guard fails on what it should: a class without paper, an undocumented parameter, a metric
    without meaning - and the generated pages then differ from the committed ones."""
    missing = reference.missing_entries()
    assert "publisher bare_publisher: no paper" in missing
    assert "publisher bare_publisher: parameter 'k' not in its docstring's Parameters" in missing
    assert "attack bare_attack: metric 'leak' has no description" in missing
    assert not any("bare_attack: parameter" in m or "bare_attack: no paper" in m for m in missing)
    assert {"index.md", "publishers.md", "attacks.md", "metrics.md"} <= set(reference_pages.stale_pages(DOCS))


def test_a_parser_key_without_words_is_found(monkeypatch):
    import multirelease.formats.scenario as scenario
    import multirelease.model.sequence as sequence

    monkeypatch.setattr(scenario, "TOP_KEYS", scenario.TOP_KEYS + ("horizon",))
    monkeypatch.setattr(sequence, "ADVERSARY_KEYS", {k: v for k, v in sequence.ADVERSARY_KEYS.items()
                                                     if k != "presence"})
    missing = reference.missing_entries()
    assert "scenario key 'horizon' has no words in multirelease/reports/reference_keys.py" in missing
    assert "adversary key 'presence' of multirelease/reports/reference_keys.py is not in the code" in missing


def test_parameter_table_reads_the_code(monkeypatch):
    """Types and ranges come from the constraints the loader checks, defaults from ``defaults``."""
    entry = reference.publisher_entry("m_invariance")
    assert "| `m` | an int in [2, inf) | required |" in entry
    assert "| `uid` | true or false | `false` |" in entry
    for check, how, what in PUBLISHERS["m_invariance"].guarantee_checks:
        assert f"| `{check}` | {how} | {what.replace('|', chr(92) + '|')} |" in entry
    entry = reference.attack_entry("correspondence")
    assert "| `method` | one of 'exact', 'closed_form' | `'exact'` |" in entry
    assert "| `time_limit` | a number in (0, inf) | `20.0` |" in entry


def test_describe_prints_the_entry(capsys):
    assert main(["describe", "correspondence.FA"]) == 0
    out = capsys.readouterr().out
    assert "Definition 3.2" in out and out.strip() == reference.describe("correspondence.FA").strip()
    assert main(["describe", "bpg"]) == 0
    assert "Listing 1" in capsys.readouterr().out
    assert main(["describe", "release[2].LM"]) == 0
    assert "Loss Metric" in capsys.readouterr().out
    assert main(["describe", "k"]) == 0  # a linking metric and a release metric
    out = capsys.readouterr().out
    assert "`linking.k`" in out and "`release[<i>].k`" in out
    assert main(["describe", "adversary.sensitive"]) == 0  # one key of a group, with its values from the code
    out = capsys.readouterr().out
    assert "| `sensitive` | `persistent` \\| `free` \\| `transitions` | `persistent` |" in out
    assert main(["describe", "--list"]) == 0
    listed = capsys.readouterr().out.split()
    assert {"mondrian", "possible_worlds.max_breach", "release.VEM", "adversary", "spec", "exit-codes"} <= set(listed)


def test_describe_unknown_name_is_bad_input(capsys):
    assert main(["describe", "mondrain"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: NAME: no reference entry named 'mondrain'") and "\n" not in err


def test_generator_check_mode(tmp_path):
    assert reference_pages.main([str(tmp_path), "--check"]) == 1  # nothing written yet
    assert reference_pages.main([str(tmp_path)]) == 0
    assert reference_pages.main([str(tmp_path), "--check"]) == 0
    (tmp_path / "reference" / "attacks.md").write_text("old", encoding="utf-8")
    (tmp_path / "reference" / "extra.md").write_text("old", encoding="utf-8")
    assert reference_pages.stale_pages(tmp_path) == ["attacks.md", "extra.md"]


def test_custodian_howto_commands_run_as_written(tmp_path, capsys):
    """The first two months of docs/howto_custodian.md (docs/examples/clinic) through the CLI: both PASS,
    the change line the page quotes is the one printed, and ``ledger --verify`` passes."""
    clinic = DOCS / "examples" / "clinic"
    howto = (DOCS / "howto_custodian.md").read_text(encoding="utf-8")
    ledger, published = tmp_path / "ledger", tmp_path / "published"
    published.mkdir()
    printed = []
    for month in (1, 2):
        code = main(["release", str(clinic / "spec.yaml"), str(clinic / f"snapshot_{month}.csv"), "--ledger",
                     str(ledger), "--out", str(published / f"release_{month}.csv"), "-q"])
        assert code == 0
        printed.append(capsys.readouterr().out)
    change = next(line for line in printed[1].splitlines() if line.startswith("snapshot:"))
    assert change == "snapshot: 15 inserted, 10 deleted, 4 updated" and change in howto
    assert main(["ledger", str(ledger), "--verify", "-q"]) == 0
    assert "verify: verdict PASS" in capsys.readouterr().out


def test_release_item_keys_are_the_parsers():
    """The keys of one ``releases`` item are a set literal inside the parser (``scenario._load_step``): read
    it from the source so that a key added there needs its words in the reference."""
    import inspect

    import multirelease.reports.reference_keys as reference_keys
    import multirelease.formats.scenario as scenario

    source = inspect.getsource(scenario._load_step)
    allowed = set(re.findall(r'"(\w+)"', re.search(r"allowed = \{([^}]*)\}", source).group(1)))
    assert allowed | {"publisher", "attributes"} == set(reference_keys.RELEASE_ITEM_KEYS)
    assert set(reference_keys.RELEASE_ITEM_KEYS) == set(reference_keys.RELEASE_ITEM_TEXT)


def test_every_reported_metric_has_a_description():
    """What the attacks actually report on the papers' worked examples (a correspondence run with given
    targets reports F_1, C_1_HIV...; update_graph with joint: true its joint figures) resolves to a metric
    description (the exact name or a described pattern such as ``{F,C,B}_<n>_<value>``)."""
    import multirelease

    reported = set()
    for name in ("fung_example_1_1", "wong_figure_2", "li_zhou_toy_m_distinct", "barbosa_table_3",
                 "toy_republication"):
        for attack, res in multirelease.run(ROOT / "scenarios" / f"{name}.yaml").report["attacks"].items():
            reported |= {(attack, m) for m in (*res["summary"], *res.get("bounds", {}))}
    assert {a for a, _ in reported} == set(ATTACKS)
    assert {("correspondence", "C_1_HIV"), ("update_graph", "joint_extra")} <= reported
    for attack, metric in sorted(reported):
        described = ATTACKS[attack].metric_descriptions
        assert metric in described or any(reference.metric_pattern(d).match(metric) for d in described if "<" in d), \
            (attack, metric)
        assert reference.describe(f"{attack}.{metric}").startswith("## `" + attack)
