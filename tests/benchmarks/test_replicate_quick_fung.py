"""``benchmarks/replicate.py fung --quick``: Figures 1-2 of Fung et al. (section 6) on 600 + 20 / 100 / 600 Adult
records, k = 10 and 20, Sen1 and Sen3.  The readings checked: FA = CA everywhere (Theorem 4.5); k-anonymized R1
and R2 leave targets with BA < k for the small increments at every k (section 6.1); the BCF-anonymized R2 has
FA, CA, BA >= k, measured by the exact correspondence attack, equal to its certificate, and costs at least the
unsafe k-anonymized R2 (section 6.2).  A BCF-anonymizer that publishes the unsafe R2 fails the check (last test).
"""
from __future__ import annotations

import pandas as pd
import pytest

from publishers import PUBLISHERS
from test_replicate_quick import load_replicate


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    out = tmp_path_factory.mktemp("fung")
    return out, load_replicate().replicate("fung", [], quick=True, out=out, echo=lambda *_: None)


def check_bcf_safe(fig2: pd.DataFrame) -> None:
    """Every BCF-anonymized R2 is BCF-anonymous (FA, CA, BA >= k) by the exact attack, as its certificate says."""
    bcf = fig2[fig2.series == "BCF-anonymized R2"]
    assert len(bcf) and (bcf.measured_by == "exact attack").all()
    for m in ("FA", "CA", "BA"):
        assert (bcf[m] >= bcf.x).all(), m
    assert bcf.certificate_agrees.all()


def test_every_figure_has_its_png_and_csv(made):
    out, tables = made
    assert sorted(tables) == ["1", "2"]
    for key in tables:
        assert (out / f"fung_fig{key}.png").stat().st_size > 1000
        assert {"figure", "panel", "series", "x", "y"} <= set(pd.read_csv(out / f"fung_fig{key}.csv").columns)


def test_fig1_fa_equals_ca_and_small_increments_violate_ba(made):
    t = made[1]["1"]
    data = t[~t.series.str.contains("= k")]
    fa = data[data.panel.str.startswith("FA")].sort_values(["panel", "series", "x"]).y.tolist()
    ca = data[data.panel.str.startswith("CA")].sort_values(["panel", "series", "x"]).y.tolist()
    assert fa == ca and len(fa) == 12
    small = data[data.panel.str.startswith("BA") & (data.series == "20D2")]
    assert len(small) == 4 and (small.y < small.x).all()
    assert data.violation.any() and not data.violation.all()


def test_fig2_bcf_safe_and_costlier_than_the_unsafe_r2(made):
    t = made[1]["2"]
    check_bcf_safe(t)
    for (panel, k), part in t.groupby(["panel", "x"]):
        cost = part.set_index("series").y
        assert cost["BCF-anonymized R2"] >= cost["k-anonymized R2"] - 1e-12, (panel, k)


def test_an_anonymizer_that_publishes_the_unsafe_r2_fails(monkeypatch):
    """A BCF-anonymizer that keeps its state and certificate but publishes TDS's k-anonymous R2: the exact
    attack finds BA < k, and the check of Figure 2 fails."""
    replicate = load_replicate()
    real = PUBLISHERS["bcf"]

    class Unsafe(real):
        def publish(self, snapshot, *, state=None, rng, **kw):
            res = real.publish(self, snapshot, state=state, rng=rng, **kw)
            if state is None:
                return res
            unsafe = PUBLISHERS["tds"](k=self.config["k"]).publish(snapshot, rng=rng)
            return type(res)(release=unsafe.release, truth=unsafe.truth, state=res.state)

    monkeypatch.setattr(replicate.fung_experiment, "PUBLISHERS", {"bcf": Unsafe, "tds": PUBLISHERS["tds"]})
    runs = replicate.Runs(dict(replicate.FUNG_QUICK, sens=(1,), d2=(20, 600)))
    with pytest.raises(AssertionError):
        check_bcf_safe(replicate.fung_fig2(runs))
