"""File formats: what multirelease reads from and writes to disk, turned into the data model and back.

* :mod:`.release_csv` - the release CSV of the contract (and its counterfeit statistics), read and written;
* :mod:`.arx` - ARX's cell notation (``--format arx``), read and written;
* :mod:`.csv_read` - snapshots read fast (pyarrow) with exactly pandas' semantics, and Parquet;
* :mod:`.yaml_safe` - the one loader for every YAML file (scenarios, ledger specs), safe on hostile input;
* :mod:`.scenario` - the scenario document parsed and validated (nothing is built or run).

Bad input is an :class:`~multirelease.errors.InputError` naming the file, the key and the problem (exit 2).
"""
