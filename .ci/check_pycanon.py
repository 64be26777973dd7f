"""Check multirelease's k and distinct l of the Adult Mondrian release against pycanon's.

Usage: check_pycanon.py RELEASE_CSV REPORT_JSON (runs in a virtual environment with pycanon only).
"""
import json
import sys

import pandas as pd
from pycanon import anonymity

QUASI = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]
SENSITIVE = ["occupation"]

release_csv, report_json = sys.argv[1], sys.argv[2]
frame = pd.read_csv(release_csv, dtype=str, keep_default_na=False)
report = json.load(open(report_json))
ours = report["attacks"]["linking"]["summary"]
k = int(anonymity.k_anonymity(frame, QUASI))
l = int(anonymity.l_diversity(frame, QUASI, SENSITIVE))
print(json.dumps({"pycanon": {"k": k, "l": l}, "multirelease": {"k": ours["k"], "l": ours["l_distinct"]},
                  "records": len(frame)}))
if (k, l) != (ours["k"], ours["l_distinct"]):
    sys.exit(f"mismatch: pycanon k={k} l={l}, multirelease k={ours['k']} l={ours['l_distinct']}")
if len(frame) != 30162:
    sys.exit(f"the release holds {len(frame)} records, not 30162")
