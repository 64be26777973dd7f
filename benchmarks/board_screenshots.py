"""The board page's screenshots (issue 25, item 6): ``docs/img/board_900.png`` and ``docs/img/board_1400.png``.

Three Adult months through the ledger as a custodian makes them (``multirelease release``, m-invariance, the
spec of ``bench_ledger.py``; ``--rows`` records, 10% leave and 20% arrive a month, a thirtieth change their
occupation within the public update model), then ``multirelease ledger DIR --html``; prints how many snapshot
identifiers the page holds (0: persons are named by the ledger's keyed pseudonyms) and writes a full-page
screenshot at each width with headless Chromium.  Adult is read in place.  Usage::

    .venv/bin/python benchmarks/board_screenshots.py [--rows 4000] [--out docs/img]
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_ledger import M_SPEC, adult, stream  # noqa: E402
from multirelease.cli import main as cli  # noqa: E402
from multirelease.ledger.operations import load_spec  # noqa: E402
from multirelease.model.transitions import load_transitions  # noqa: E402

WIDTHS = (900, 1400)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4000)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="board_"))
    try:
        spec = folder / "adult.yaml"
        spec.write_text(M_SPEC, encoding="utf-8")
        doc, _, schema, _ = load_spec(spec)
        model = load_transitions(doc.get("transitions"), schema)
        (folder / "published").mkdir()
        ids: set[str] = set()
        rows = args.rows
        for month, frame in stream(adult(), 3, rows, rows // 10, rows // 5, rows // 30, np.random.default_rng(14),
                                   model):
            snap = folder / f"snapshot_{month}.csv"
            frame.to_csv(snap)
            ids |= set(frame.index.astype(str))
            code = cli(["release", str(spec), str(snap), "--ledger", str(folder / "ledger"), "--out",
                        str(folder / "published" / f"release_{month}.csv"), "-q"])
            print(json.dumps({"month": month, "exit": code}), flush=True)
        page = folder / "board.html"
        code = cli(["ledger", str(folder / "ledger"), "--html", str(page), "-q"])
        words = set(re.findall(r"[A-Za-z0-9_~-]+", page.read_text(encoding="utf-8")))
        print(json.dumps({"page": "board.html", "exit": code, "bytes": page.stat().st_size,
                          "snapshot_ids_on_page": len(ids & words)}), flush=True)
        browser = shutil.which("chromium") or shutil.which("chromium-browser")
        if browser is None:
            print(json.dumps({"screenshots": "chromium not found"}))
            return
        args.out.mkdir(parents=True, exist_ok=True)
        for width in WIDTHS:
            target = args.out / f"board_{width}.png"
            subprocess.run([browser, "--headless", "--no-sandbox", "--hide-scrollbars", f"--screenshot={target}",
                            f"--window-size={width},6000", page.as_uri()], capture_output=True, check=True)
            print(json.dumps({"screenshot": str(target), "width": width}), flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
