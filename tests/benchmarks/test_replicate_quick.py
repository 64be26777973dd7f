"""``benchmarks/replicate.py --quick``: Li & Zhou's Figures 3-4 (naive l-diversity, m-invariance) and Barbosa
et al.'s Figures 1-3 run, write their PNG and CSV, and show the trends the papers state where they hold at
this size.  The m-Distinct figures (5-9) are in ``test_replicate_quick_distinct.py`` (another worker).

A figure whose script raises fails here, and so does a publisher that breaks its principle: the m-Distinct
series of Figure 3(a) is attacked like the naive ones and must stay at 0 vulnerable values (Lemma 3), and
m-invariance's invalid records must be 0 at d = 1 and grow with the releases.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_replicate():
    """The script as a module (benchmarks/ is no package)."""
    if "replicate" in sys.modules:
        return sys.modules["replicate"]
    spec = importlib.util.spec_from_file_location("replicate", ROOT / "benchmarks" / "replicate.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["replicate"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def li_zhou(tmp_path_factory):
    out = tmp_path_factory.mktemp("li_zhou")
    return out, load_replicate().replicate("li_zhou", ["3", "4"], quick=True, out=out, echo=lambda *_: None)


@pytest.fixture(scope="module")
def barbosa(tmp_path_factory):
    out = tmp_path_factory.mktemp("barbosa")
    return out, load_replicate().replicate("barbosa", [], quick=True, out=out, echo=lambda *_: None)


def series(table: pd.DataFrame, name: str) -> list:
    return table[table.series == name].sort_values("x")["y"].tolist()


def test_every_figure_has_its_png_and_csv(li_zhou, barbosa):
    for (out, tables), paper in ((li_zhou, "li_zhou"), (barbosa, "barbosa")):
        for key in tables:
            assert (out / f"{paper}_fig{key}.png").stat().st_size > 1000
            back = pd.read_csv(out / f"{paper}_fig{key}.csv")
            assert {"figure", "series", "x", "y", "m_distinct_variant"} <= set(back.columns)
    assert sorted(li_zhou[1]) == ["3a", "3b", "4a", "4b"] and sorted(barbosa[1]) == ["1", "2", "3"]


def test_fig3a_naive_disclosure_grows_and_m_distinct_discloses_nothing(li_zhou):
    """Li & Zhou section VI.B: 2-diversity's vulnerable values grow as the releases go on; a larger l discloses
    fewer; m-Distinct (the paper's variant), attacked the same way, none (Lemma 3)."""
    t = li_zhou[1]["3a"]
    l2, l4 = series(t, "naive_l2"), series(t, "naive_l4")
    assert l2 == sorted(l2) and l2[-1] > l2[0] and l2[-1] > 0
    assert all(b <= a for a, b in zip(l2, l4))
    assert series(t, "m_distinct_m4_paper") == [0] * len(l2)
    assert set(t.m_distinct_variant) == {"paper"}


def test_fig3b_smaller_diameter_more_vulnerable(li_zhou):
    t = li_zhou[1]["3b"]
    for name in ("naive_l2", "naive_l4"):
        ys = series(t, name)  # in increasing d
        assert ys[0] >= ys[-1] and ys[0] > 0
    assert all(b <= a for a, b in zip(series(t, "naive_l2"), series(t, "naive_l4")))


def test_fig4_m_invariance_invalid_records(li_zhou):
    """Figure 4: the invalid records of m-invariance increase with the releases (a); none at d = 1, more at a
    larger d (b) - internal updates are the cause."""
    a, b = li_zhou[1]["4a"], li_zhou[1]["4b"]
    ys = series(a, "m_invariance_m4")
    assert ys[0] == 0 and ys == sorted(ys) and ys[-1] > 0
    by_d = dict(zip(b.x, b.y))
    assert by_d[1] == 0 and by_d[max(by_d)] > 0


def test_barbosa_no_violation_and_more_releases_as_r_falls(barbosa):
    """Barbosa et al. section 7: neither BPG nor m-invariance (with uids for the record-tracking adversary)
    leaves a candidate set below k = l = 10; a smaller r means more releases (Figure 1's runs).  The times
    themselves are not compared: a few tenths of a second on a shared machine are noise."""
    fig1, fig2, fig3 = (barbosa[1][k] for k in ("1", "2", "3"))
    assert (fig1.violations == 0).all()
    for method in ("bpg", "m_invariance"):
        part = fig1[fig1.series == method].sort_values("x")
        assert part.releases.tolist() == sorted(part.releases.tolist(), reverse=True)
        assert part.releases.iloc[0] > part.releases.iloc[-1]
    assert (fig2.y > 0).all()
    assert set(fig3.panel) == {"FEM", "VEM"} and fig3.y.notna().all()
    assert (fig3[fig3.series.str.startswith("bpg")].counterfeits == 0).all()


def test_cli_answers_no_experiment_and_bad_figures_with_exit_2(capsys):
    main = load_replicate().main
    assert main(["wong"]) == 2 and "no experiment" in capsys.readouterr().err
    assert main(["li_zhou", "--figure", "42"]) == 2 and "no figure 42" in capsys.readouterr().err
    assert main(["nobody"]) == 2
