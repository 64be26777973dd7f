"""``benchmarks/replicate.py li_zhou --quick``, Figures 5-9 (m-Distinct, both variants), and the publisher's
``variant`` parameter.  The trends checked are those that hold at this size: the query error falls as the
range theta grows (Figure 5(b)); CNT_g grows with m (Figure 8(b)); the paper's variant needs fewer counterfeits
than the default (Algorithms 2-3 refill the gaps the default fills with counterfeits: Figures 7-8); every
figure names the variant that made it.
"""
from __future__ import annotations

import pytest

from multirelease.errors import InputError
from publishers import PUBLISHERS
from publishers.m_invariance.distinct import PAPER_INTERSECT_LIMIT
from test_replicate_quick import load_replicate

FIGURES = ["5a", "5b", "6", "7", "8a", "8b", "9a", "9b"]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    out = tmp_path_factory.mktemp("li_zhou_distinct")
    made = load_replicate().replicate("li_zhou", FIGURES, quick=True, out=out, echo=lambda *_: None)
    for key in FIGURES:
        assert (out / f"li_zhou_fig{key}.png").exists() and (out / f"li_zhou_fig{key}.csv").exists()
    return made


def test_every_figure_names_both_variants(tables):
    assert sorted(tables) == sorted(FIGURES)
    for key, t in tables.items():
        assert set(t.m_distinct_variant) == {"default, paper"}, key
        assert {s.rsplit("_", 1)[-1] for s in t.series} == {"default", "paper"}, key


def test_fig5b_error_falls_as_the_range_grows(tables):
    t = tables["5b"]
    for name, part in t.groupby("series"):
        ys = part.sort_values("x").y.tolist()
        assert ys[-1] < ys[0], name


def test_fig7_fig8_paper_variant_fewer_counterfeits_growing_with_m(tables):
    seven = tables["7"]
    paper = seven[seven.series.str.endswith("paper")].y.iloc[1:].mean()
    default = seven[seven.series.str.endswith("default")].y.iloc[1:].mean()
    assert 0 < paper < default
    b = tables["8b"]
    for variant in ("paper", "default"):
        ys = b[b.series == variant].sort_values("x").y.tolist()
        assert ys == sorted(ys) and ys[-1] > ys[0], variant
    a = tables["8a"]
    for d, part in a.groupby("x"):
        assert part[part.series.str.endswith("paper")].y.iloc[0] < part[part.series.str.endswith("default")].y.iloc[0]


def test_fig5_fig6_fig9_measures_are_sane(tables):
    for key in ("5a", "6"):
        assert tables[key].y.between(0, 1).all(), key
    for key in ("9a", "9b"):
        assert (tables[key].y > 0).all(), key


def test_variant_paper_sets_algorithms_2_3():
    """``variant: paper`` is Li & Zhou's Algorithms 2-3: refill on, intersection buckets built; a parameter
    that contradicts it is refused with the one-line message format."""
    pub = PUBLISHERS["m_distinct"](m=4, variant="paper")
    assert pub.config["refill"] is True and pub.config["intersect_limit"] == PAPER_INTERSECT_LIMIT
    assert PUBLISHERS["m_distinct"](m=4, variant="paper", intersect_limit=40).config["intersect_limit"] == 40
    default = PUBLISHERS["m_distinct"](m=4)
    assert default.config["variant"] == "default" and default.config["refill"] is False
    assert PUBLISHERS["m_distinct_star"](m=4, variant="paper").config["star"] is True
    for bad in ({"refill": False}, {"uid": True}, {"intersect_limit": 0}):
        with pytest.raises(InputError, match=f"'{next(iter(bad))}' parameter of m_distinct"):
            PUBLISHERS["m_distinct"](m=4, variant="paper", **bad)
    with pytest.raises(InputError, match="must be one of 'default', 'paper'"):
        PUBLISHERS["m_distinct"](m=4, variant="xiao")
