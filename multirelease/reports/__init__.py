"""Reports: what a run, a certification or a ledger prints and writes, built from one JSON document.

* :mod:`.document` - the JSON report of the contract (``build_report``), the release metrics and the terminal
  tables;
* :mod:`.html_page` and :mod:`.html_witness` - the self-contained offline HTML page, drawn from the JSON alone;
* :mod:`.targets_file` - every target row of the attacks (``--targets-file``);
* :mod:`.reference` - the reference entries generated from the code (``multirelease describe NAME``), with the
  words of :mod:`.reference_keys`; :mod:`.reference_pages` writes ``docs/reference/``
  (``python -m multirelease.reports.reference_pages docs/``).
"""
