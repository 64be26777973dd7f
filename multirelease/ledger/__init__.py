"""The release ledger: each month's release published from private state and certified before it is written.

* :mod:`.store` - the private store: one SQLite database per sequence (0600, transactions, one writer), its
  history, keys and state;
* :mod:`.operations` - ``multirelease release``, ``ledger`` and ``certify --ledger``: the month made from the
  store and the new snapshot, gated, written atomically (a kill at any moment loses nothing);
* :mod:`.gate` - what the ledger keeps of its gate, so that a month costs what the new release costs.

Tests: ``tests/ledger/`` (faults injected at every write point, a second writer, the incremental gate against
the whole-sequence run, every publisher through the ledger).
"""
