"""Shared test configuration: hypothesis profiles and the Adult data fixture.

Profiles: ``quick`` (derandomized, 15 examples, also for the properties that ask for more), the default of a
plain ``pytest`` (the README's first run: under 5 minutes on 2 cores); ``ci`` (bounded and derandomized: 30 examples, prints reproduction blobs) when the
``CI`` environment variable is set or ``HYPOTHESIS_PROFILE=ci``; ``dev`` (60 examples) when
``HYPOTHESIS_PROFILE=dev``; ``thorough``
(200 examples) when ``HYPOTHESIS_PROFILE=thorough`` (``.ci/run`` runs it after the quick start, with the
``slow`` tests: the bundled Adult-scale scenarios).  No deadlines: the exact engines have a slow first call.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# `from strategies import ...` works whether pytest runs with rootdir or importmode settings: what tests in
# several folders share (strategies, bruteforce, ledger_data, tally) lives here in tests/; a test module imports
# another only from its own folder
sys.path.insert(0, str(Path(__file__).resolve().parent))
# the project's own packages ahead of it: tests/publishers, tests/attacks, tests/solver (folders of test modules,
# no package) must never shadow publishers, attacks, solver - also under a plain `pytest`, which, unlike
# `python -m pytest`, does not put the working folder on the path
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

settings.register_profile("ci", derandomize=True, max_examples=30, deadline=None, print_blob=True)
settings.register_profile("thorough", max_examples=200, deadline=None)
settings.register_profile("dev", max_examples=60, deadline=None)
settings.register_profile("quick", derandomize=True, max_examples=15, deadline=None, print_blob=True)


def _profile() -> str:
    chosen = os.environ.get("HYPOTHESIS_PROFILE", "")
    if chosen in ("thorough", "dev", "ci", "quick"):
        return chosen
    if os.environ.get("CI"):
        return "ci"
    return "quick"


settings.load_profile(_profile())
#: the quick profile's examples a property, also for the properties that ask for more in their own settings
#: (their counts hold in every other profile: ci, dev, thorough)
QUICK_EXAMPLES = 15


def pytest_collection_modifyitems(config, items):
    """Under the quick profile (the README's first run) no property draws more than :data:`QUICK_EXAMPLES`
    examples, whatever its ``@settings(max_examples=...)`` asks; ``.ci/run`` runs them all again with theirs."""
    if _profile() != "quick":
        return
    for item in items:
        test = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
        own = getattr(test, "_hypothesis_internal_use_settings", None)
        if getattr(test, "hypothesis", None) is not None and own is not None and own.max_examples > QUICK_EXAMPLES:
            test._hypothesis_internal_use_settings = settings(own, max_examples=QUICK_EXAMPLES)


def _import_project_modules() -> None:
    """Import every module of the four packages before any test runs.  Hypothesis (>= 6.131) also draws, 5% of
    the time, constants it reads from the project modules imported *so far* (``_get_local_constants``): with
    the registries importing a publisher or attack module when it is first looked up, the examples a test drew
    (and so e.g. global_guarantee's refusal counts, even derandomized) depended on which tests ran before it.
    With every module imported up front the pool is the same whatever the order or selection of tests."""
    import importlib
    import pkgutil
    import warnings

    for package in ("multirelease", "publishers", "attacks", "solver"):
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            try:
                importlib.import_module(info.name)
            except Exception as exc:  # a module being edited must not stop every other test
                warnings.warn(f"conftest: {info.name} does not import ({exc})", stacklevel=1)


_import_project_modules()


@pytest.fixture(scope="session")
def adult_dir() -> Path:
    """The Adult data set with its ARX hierarchies, beside the repository checkout (``../shared``)."""
    path = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult"
    if not (path / "adult.csv").is_file():
        pytest.fail(f"the Adult data set is missing: expected {path}/adult.csv and its ARX hierarchies "
                    f"(the shared data directory lives beside the repository checkout)")
    return path
