"""multirelease: publish, attack and certify anonymized tables released many times, from Python as from the
command line (the same pipeline; :mod:`multirelease.api`).

``multirelease.run(scenario)``, ``multirelease.certify(spec, [df1, df2])``, ``multirelease.publish(...)``,
``multirelease.ledger_publish(...)``, ``multirelease.ledger_history(DIR)``, ``multirelease.ledger_withdraw(DIR, N,
REASON)``, ``multirelease.verify_ledger(DIR)`` and ``multirelease.ledger_headroom(DIR)``
take file paths, dicts and pandas DataFrames and return immutable :class:`~multirelease.api.Result` objects
(``.verdict``, ``.report``, ``.to_frame()``, the HTML report in a notebook).  ``describe(NAME)`` is the
reference entry of a publisher, attack, metric or key.  The names are imported on first use, so
``import multirelease`` loads nothing else.
"""
from __future__ import annotations

__all__ = ["run", "certify", "publish", "ledger_publish", "ledger_history", "ledger_withdraw", "verify_ledger",
           "ledger_headroom", "Result", "describe", "InputError"]

_WHERE = {"run": "api", "certify": "api", "publish": "api", "ledger_publish": "api", "ledger_history": "api",
          "ledger_withdraw": "api", "verify_ledger": "api", "ledger_headroom": "api", "Result": "api",
          "describe": "reports.reference", "InputError": "errors"}


def __getattr__(name: str):
    """PEP 562: the public names, imported from their module when first used."""
    if name in _WHERE:
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
