"""kill -9 loses nothing (issue 14): ``release`` is killed with SIGKILL at 20 moments spread over its run - the
ten named points of :mod:`multirelease.ledger.operations` (``MULTIRELEASE_FAULT_POINT``, before and after the lock,
the gate, the temporary file, the transaction, the rename) and ten instants spread evenly over the measured
length of an uninterrupted call - then re-run; the ledger and the release folder must equal an uninterrupted
run's.  Each trial starts from a copy of one ledger holding release 1, so the ledger's secret (which seeds the
publisher, uids included) is the same and the comparison is exact."""
from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from multirelease.ledger.store import DB_NAME, Ledger
from ledger_data import write_snapshots, write_spec

POINTS = ("start", "locked", "read", "planned", "gated", "written", "recorded", "committed", "renamed", "done")


def _cmd(spec: Path, snapshot: Path, ledger: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "multirelease.cli", "release", str(spec), str(snapshot), "--ledger", str(ledger),
            "--out", str(out), "-q"]


def _contents(ledger: Path, releases: Path) -> dict:
    """What must survive: every recorded field but the date and the folder of the file, every private blob,
    the release folder's files and the ledger folder's file names."""
    with Ledger(ledger, write=False) as led:
        rows = []
        for r in led.history():
            fields = {k: v for k, v in r.__dict__.items() if k not in ("created", "file", "counterfeits_file")}
            fields["file"] = Path(r.file).name
            fields["counterfeits_file"] = r.counterfeits_file and Path(r.counterfeits_file).name
            rows.append((fields, led.blobs(r.n)))
        secret = led.meta()["secret"]
    return {"rows": rows, "secret": secret, "files": {p.name: p.read_bytes() for p in sorted(releases.iterdir())},
            "ledger_files": sorted(p.name for p in ledger.iterdir())}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("faults")
    spec = write_spec(root, publisher="m_invariance, m: 2, uid: true",
                      attacks="  - linking: {l: 2}\n  - update_graph: {linkage: population}\n  - intersection\n")
    snaps = write_snapshots(root, months=2, n=80)
    base = root / "base"
    (base / "releases").mkdir(parents=True)
    first = subprocess.run(_cmd(spec, snaps[0], base / "ledger", base / "releases" / "release_1.csv"),
                           capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    ref = root / "ref"
    shutil.copytree(base, ref)
    t0 = time.perf_counter()
    second = subprocess.run(_cmd(spec, snaps[1], ref / "ledger", ref / "releases" / "release_2.csv"),
                            capture_output=True, text=True)
    length = time.perf_counter() - t0
    assert second.returncode == 0, second.stderr
    return {"root": root, "spec": spec, "snaps": snaps, "base": base, "length": length,
            "expected": _contents(ref / "ledger", ref / "releases")}


def _trial(world, name: str, kill) -> None:
    trial = world["root"] / name
    shutil.copytree(world["base"], trial)
    cmd = _cmd(world["spec"], world["snaps"][1], trial / "ledger", trial / "releases" / "release_2.csv")
    kill(cmd)
    again = subprocess.run(cmd, capture_output=True, text=True)
    assert again.returncode == 0, (name, again.stderr)
    got = _contents(trial / "ledger", trial / "releases")
    expected = world["expected"]
    assert got["files"].keys() == expected["files"].keys(), name  # no partial file left, none missing
    assert got == expected, name
    assert DB_NAME in got["ledger_files"]
    shutil.rmtree(trial)


@pytest.mark.parametrize("point", POINTS)
def test_kill_at_a_named_point(world, point):
    def kill(cmd):
        env = {**os.environ, "MULTIRELEASE_FAULT_POINT": point}
        killed = subprocess.run(cmd, capture_output=True, text=True, env=env)
        assert killed.returncode == -signal.SIGKILL, (point, killed.stderr)

    _trial(world, f"point_{point}", kill)


#: the instants the README's quick run kills at (.ci/run kills at all ten: about 3.5 s each)
QUICK_TENTHS = (2, 5, 8)


@pytest.mark.parametrize("tenth", [t if t in QUICK_TENTHS else pytest.param(t, marks=pytest.mark.slow)
                                   for t in range(1, 11)])
def test_kill_at_an_instant(world, tenth):
    def kill(cmd):
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(world["length"] * tenth / 11)
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    _trial(world, f"instant_{tenth}", kill)


@pytest.mark.parametrize("point", ("written", pytest.param("recorded", marks=pytest.mark.slow), "committed",
                                   pytest.param("renamed", marks=pytest.mark.slow)))
def test_kill_while_the_ledger_is_made(world, point):
    """A first call killed before its transaction commits leaves no ledger (or an empty one the next call
    starts over from); killed after it, the re-run finds release 1 recorded and its file in place (the quick
    run kills before and after the commit; .ci/run at every point)."""
    trial = world["root"] / f"first_{point}"
    (trial / "releases").mkdir(parents=True)
    cmd = _cmd(world["spec"], world["snaps"][0], trial / "ledger", trial / "releases" / "release_1.csv")
    killed = subprocess.run(cmd, capture_output=True, env={**os.environ, "MULTIRELEASE_FAULT_POINT": point})
    assert killed.returncode == -signal.SIGKILL
    assert subprocess.run(cmd, capture_output=True).returncode == 0
    got = _contents(trial / "ledger", trial / "releases")
    assert [r[0]["n"] for r in got["rows"]] == [1] and list(got["files"]) == ["release_1.csv"], point
    assert got["rows"][0][0]["sha256"] == hashlib.sha256(got["files"]["release_1.csv"]).hexdigest()


@pytest.mark.slow  # .ci/run runs it, the README's quick run does not
@pytest.mark.parametrize("point", ("withdraw-removed", "withdraw-committed"))
def test_kill_during_a_withdrawal(world, point):
    """``ledger --withdraw`` killed after the files are removed (before its transaction) or after the commit:
    the re-run finishes the withdrawal; the ledger then holds release 1 only, release 2's row in ``withdrawn``."""
    trial = world["root"] / f"withdraw_{point}"
    shutil.copytree(world["base"], trial)
    release_2 = _cmd(world["spec"], world["snaps"][1], trial / "ledger", trial / "releases" / "release_2.csv")
    assert subprocess.run(release_2, capture_output=True).returncode == 0
    cmd = [sys.executable, "-m", "multirelease.cli", "ledger", str(trial / "ledger"), "--withdraw", "2", "--reason",
           "never sent"]
    killed = subprocess.run(cmd, capture_output=True, env={**os.environ, "MULTIRELEASE_FAULT_POINT": point})
    assert killed.returncode == -signal.SIGKILL
    again = subprocess.run(cmd, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    with Ledger(trial / "ledger", write=False) as led:
        assert [r.n for r in led.history()] == [1] and [w.n for w in led.withdrawn()] == [2]
        assert [(e.n, e.kind) for e in led.events()] == [(2, "withdrawn")]
    assert sorted(p.name for p in (trial / "releases").iterdir()) == ["release_1.csv"] + \
        (["counterfeits_1.csv"] if (trial / "releases" / "counterfeits_1.csv").exists() else [])
    # and the month goes out again as release 2, the same file as the uninterrupted run's
    assert subprocess.run(release_2, capture_output=True).returncode == 0
    assert (trial / "releases" / "release_2.csv").read_bytes() == world["expected"]["files"]["release_2.csv"]
    shutil.rmtree(trial)
