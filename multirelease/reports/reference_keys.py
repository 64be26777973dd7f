"""What every key of a scenario and of a ledger spec means, every release metric and every exit code: the
words of the reference (:mod:`multirelease.reports.reference`) that are not in a docstring.

The *names* come from the code that parses them (``scenario.TOP_KEYS``, ``sequence.ADVERSARY_KEYS``,
``dynamics.STREAM_KEYS``, ``ledger_release.SPEC_KEYS``, ``report.RELEASE_METRICS``, ``expect.EXIT_CODES``...);
these tables only say what they mean (this module imports nothing).
:func:`multirelease.reports.reference.missing_entries` lists every name of the code without an entry here (or an
entry that names nothing), and every registered publisher or attack without paper, docstring, parameter or metric
descriptions; ``tests/reports/test_reference.py`` asserts the list is empty, so a key added to a parser or a class
added to a registry cannot be left out of the reference.
"""
from __future__ import annotations

__all__ = ["TOP_KEY_TEXT", "RELEASE_ITEM_TEXT", "ATTRIBUTE_KEY_TEXT", "ROLE_TEXT", "GENERALIZATION_TEXT",
           "ADVERSARY_TEXT", "DYNAMICS_TEXT", "STREAM_TEXT", "TRANSITIONS_TEXT", "TARGETS_TEXT", "SPEC_KEY_TEXT",
           "RELEASE_METRIC_TEXT", "EXIT_TEXT", "RELEASE_ITEM_KEYS", "DYNAMICS_KEYS"]

#: the scenario's top-level keys (``scenario.TOP_KEYS``)
TOP_KEY_TEXT = {
    "name": "the scenario's name, printed in reports (default: the file name without .yaml)",
    "description": "free text, printed in reports",
    "seed": "a non-negative integer seeding every random choice of the publishers and of a generated stream "
            "(default 0): the same seed gives the same report byte for byte",
    "schema": "`schema.attributes.<name>`: each attribute's role, hierarchy and generalization (below)",
    "data": "the raw table: `{file: path, separator: \",\", offset, limit}` (a CSV with a header, or a "
            "`.parquet` file, every value read as text; `offset` records skipped, at most `limit` read) or "
            "`{rows: [{attribute: value, ...}, ...]}`",
    "dynamics": "changes applied to the table before a release: `{<release index>: {insert, delete, update}}`, "
                "or `{stream: {...}}` for a generated update stream (below)",
    "transitions": "the public update model of sensitive values (Li & Zhou, Definition 7): exactly one of "
                   "`candidates`, `probabilities`, `diameter`, `free` (below)",
    "releases": "the non-empty list of releases: each `{publisher: NAME, <params>}` (simulated) or a release "
                "given as published (`{file}` or `{rows}`, below)",
    "adversary": "what the attacker knows (below)",
    "attacks": "a list of `NAME` or `{NAME: {params}}` (the names and parameters of the attacks page)",
    "expect": "a list of lines `<attack>.<metric> <op> <number>` or `release[<i>].<metric> <op> <number>` "
              "(i from 1, or -1 for the newest release); ops "
              "`== != < <= > >=`; the number may be a fraction `a/b`. Requirements (privacy claims: PASS / FAIL / "
              "UNKNOWN), or, with `purpose: research`, expectations (a paper's figures: reproduced or not)",
    "targets": "who the attacks judge: `population` (the individuals of the data; the default when there is "
               "data) or `regions` (every target the published regions allow)",
    "purpose": "`certification` (the default: the `expect` lines are requirements, judged with every attack's "
               "baseline) or `research` (the `expect` lines are expectations: a paper's figures, answered "
               "reproduced / not reproduced apart from the privacy verdict; `run` exits by them, `certify` "
               "by the privacy verdict)",
    "waive": "baseline lines waived by name, `<attack>.<metric>` (as `--waive`): each attack's baseline (what "
             "\"no one is disclosed\" means for it, raised to what the releases claim) is judged whenever the "
             "attack runs; a waived line is still shown, named in the verdict and recorded, never counted",
}

#: keys of one item of ``releases`` (scenario.py ``_load_step``)
RELEASE_ITEM_KEYS = ("publisher", "attributes", "file", "rows", "separator", "notation", "counterfeits", "snapshot",
                     "anatomy")
RELEASE_ITEM_TEXT = {
    "publisher": "a registered publisher name; the item's other keys (but `attributes`) are its parameters",
    "attributes": "a vertical subset: the attributes this release publishes (default: all but the identifier)",
    "file": "a release as published: a CSV in the release file format (generalized values as hierarchy labels, "
            "`*`, `[20,29]`, `{UK,France}`; optional `group` and `uid` columns)",
    "rows": "a release as published, inline: a list of mappings, one per published record",
    "separator": "the separator of `file` (default `,`)",
    "notation": "how `file` writes generalized values: `native`, `arx` (ARX's output: `;`, `[20, 30[`, `<20`, "
                "`81***`) or `auto` (the default: told from the file)",
    "counterfeits": "m-invariance / m-Distinct counterfeit statistics: `{file: path}` or `{rows: [{group, "
                    "counterfeits}]}`",
    "snapshot": "the raw table behind this release, with its identifier column (`{file}` or `{rows}`); "
                "without it, `data` after the dynamics is the snapshot",
    "anatomy": "true: quasi-identifiers are published as they are and `group` links them to the sensitive "
               "values (anatomy-style release)",
}

#: keys of ``schema.attributes.<name>`` (``schema._ATTRIBUTE_KEYS``); a bare string is the role
ATTRIBUTE_KEY_TEXT = {
    "role": "one of the roles below (a bare string `age: quasi` is the role alone)",
    "hierarchy": "a nested mapping (`{Europe: [UK, France]}`), `{file: path}` (an ARX hierarchy CSV) or "
                 "`{numeric: {min, max, bands: [widths]}}`; required for a quasi-identifier",
    "generalization": "how a value is generalized: one of the generalizations below (default `interval` for a "
                      "numeric hierarchy, else `hierarchy`)",
    "allow_missing": "sensitive attributes only: `true` keeps blank / NaN cells as a value of their own "
                     "(default `false`: a blank sensitive value is bad input)",
}
ROLE_TEXT = {
    "identifier": "the record's identifier (never published; dynamics and ledgers follow records by it)",
    "quasi": "a quasi-identifier: the adversary may know it; published generalized",
    "non-identifier": "published as it is, neither quasi-identifying nor sensitive",
    "sensitive": "the sensitive value; several sensitive attributes form one composite value",
    "insensitive": "kept in the table, not protected",
}
GENERALIZATION_TEXT = {
    "hierarchy": "a value is replaced by a node of its taxonomy",
    "interval": "a numeric / ordered value is replaced by an interval of leaves `[lo, hi]`",
    "subsets": "a value is replaced by an arbitrary set of values `{UK,France}` (Shmueli & Tassa's toy "
               "examples)",
}

#: keys of ``adversary`` (``sequence.ADVERSARY_KEYS``); the defaults are read from ``sequence.Adversary``
ADVERSARY_TEXT = {
    "quasi_identifiers": "whose quasi-identifiers the adversary knows: everyone's, the targets' only, or none",
    "presence": "she knows who is in each release",
    "record_tracking": "she follows records across releases by their published `uid` (Barbosa et al.)",
    "correspondence": "continuous publishing: every record of a release reappears in every later one (Fung "
                      "et al.)",
    "sensitive": "how sensitive values behave between releases: `persistent` (one value per individual for "
                 "the whole sequence), `free` (they change arbitrarily, Wong et al.), `transitions` (they follow "
                 "the `transitions` model, Li & Zhou)",
    "changing": "linking columns (roles `non-identifier`, `insensitive`: published as they are, unknown to the "
                "adversary) whose values change between releases, so they link nothing; every other linking "
                "column is persistent, one value per person, and every attack reads it to link a person's rows "
                "across releases (Shmueli & Tassa section 5.2, Example 5.1). A column the adversary knows is a "
                "quasi-identifier: declare it `role: quasi`",
}

#: keys of one ``dynamics.<i>`` change (``table.Change.from_mapping``)
DYNAMICS_KEYS = ("insert", "delete", "update")
DYNAMICS_TEXT = {
    "insert": "records that arrive: `{rows: [...]}`, `{file: path}` or a list of rows",
    "delete": "identifiers of the records that leave",
    "update": "internal updates: `{<id>: {<attribute>: <new value>}}` or `[{id, <attribute>: <value>}]`",
}

#: keys of ``dynamics.stream`` (``dynamics.STREAM_KEYS``)
STREAM_TEXT = {
    "initial": "records of `data` in the first snapshot (a sample; default all)",
    "insert": "records inserted before each later release (an int >= 0)",
    "delete": "records deleted before each later release (an int >= 0)",
    "sensitive": "sensitive values updated before each later release, drawn from `transitions` (an int >= 0)",
    "qi": "quasi-identifier updates: `{<attribute>: {grow: step} | {order: [...], rate} | {moves: {...}, "
          "rate}}`",
    "seed": "the stream's own seed (default: the scenario's)",
}

#: keys of ``transitions`` (``transitions._KEYS``)
TRANSITIONS_TEXT = {
    "candidates": "candidate update sets `{value: [values it may update to]}`, each update equally likely "
                  "(Li & Zhou, Definition 12)",
    "probabilities": "`P_trans` itself: `{value: {value: probability}}`, each row summing to 1 (Definition 7)",
    "diameter": "a generated model: every value may update to `d` values (section VI.A)",
    "free": "`true`: every value may update to every value (Lemma 1)",
    "unlisted": "values `candidates` does not list: `stay` (the default), `free` or `error`",
    "shape": "with `diameter`: `window` (the d nearest values, default) or `blocks` (consecutive blocks of d "
             "values: transitive candidate sets, as m-Distinct* needs)",
    "values": "the sensitive domain, listed explicitly (default: the sensitive hierarchy's leaves)",
    "stay": "accepted and not read (no form uses it yet)",
}

#: values of ``targets`` (``scenario.TARGETS``)
TARGETS_TEXT = {
    "population": "the individuals of the data (the certification case)",
    "regions": "every target the published regions allow (Fung et al.'s BCF-anonymity is defined over these)",
}

#: keys of a ledger spec (``ledger_release.SPEC_KEYS``)
SPEC_KEY_TEXT = {
    "name": "the spec's name, printed in reports",
    "description": "free text",
    "schema": "the scenario's schema; it must have one `identifier` attribute (records are followed by it)",
    "transitions": "the public update model (as in a scenario)",
    "adversary": "what the attacker knows (as in a scenario)",
    "attacks": "the attacks the gate runs (as in a scenario)",
    "expect": "the requirements the gate judges, with the publisher's own guarantee and the attacks' baselines",
    "waive": "baseline lines waived by name, `<attack>.<metric>` (as in a scenario); shown in the verdict",
    "targets": "who the attacks judge (as in a scenario)",
    "publisher": "`{publisher: NAME, <params>}`: the publisher of every release (never `database`: the ledger "
                 "keeps BPG's database itself)",
    "snapshot": "`{separator: \",\"}`: how the monthly snapshot CSV is read",
}

#: the release metrics of every report (``report.RELEASE_METRICS``; :mod:`multirelease.model.metrics`)
RELEASE_METRIC_TEXT = {
    "records": "rows published (counterfeits included)",
    "classes": "equivalence classes (QI-groups) of the release",
    "k": "the smallest class (k-anonymity of this release alone)",
    "l_distinct": "the fewest distinct sensitive values in a class (distinct l-diversity)",
    "l_entropy": "the smallest exp(H) of a class (entropy l-diversity)",
    "LM": "Loss Metric, eq. (1) of Shmueli & Tassa, averaged per entry: 0 (no loss) to 1 (all suppressed)",
    "EM": "Entropy Measure, section 2.2 of Shmueli & Tassa, bits per entry: 0 to log2 of the domain size",
    "discernibility": "C_DM = sum over classes of |E|^2 (Bayardo & Agrawal; Barbosa et al. section 3)",
    "discernibility_normalized": "C_DM / |R|^2 (Fung et al. section 6.2): 1/|R| (best) to 1",
    "AIL": "average information loss of Byun et al. (Barbosa et al. section 3): 0 to the number of QIs",
    "FEM": "Frequency Entropy Metric, Barbosa et al. section 5, bits: higher keeps more information",
    "VEM": "Volume Entropy Metric, Barbosa et al. section 5, bits: higher keeps more information",
    "counterfeits": "counterfeit rows published (m-invariance, m-Distinct); absent when there are none",
    "counterfeit_share": "counterfeit rows / rows published: 0 (none) to 1; a custodian's utility requirement, "
                         "e.g. `release[-1].counterfeit_share <= 0.05` (every month of a ledger)",
    "withheld_share": "records of the snapshot not in the release / records of the snapshot (counted: the "
                      "snapshot's records less the rows published that are not counterfeits, at least 0); with the "
                      "snapshot only",
}

#: every exit code of every command
EXIT_TEXT = {
    0: "everything held / PASS, or nothing was checked (verdict `none`); `run` of a `purpose: research` "
       "scenario: its expectations were reproduced (its privacy verdict is printed apart)",
    1: "a requirement failed / FAIL (with a witness; the attacks' baselines count); `run` of a research "
       "scenario: an expectation was not reproduced; `ledger --verify`: a file changed or is missing",
    2: "bad input: one line naming the file, the key (or row and column) and the problem; no traceback, "
       "nothing written",
    3: "UNKNOWN: a solver stopped before a proof (the metric is an interval that does not settle the "
       "requirement)",
}
