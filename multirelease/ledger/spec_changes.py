"""What changed between two ledger specs (issue 25, "Every spec change is on record").

A ledger records the spec every release was made with.  Everything the gate reads - the schema, the publisher,
the public update model (``transitions``), the adversary, the attacks, the custodian's requirements
(``expect``), the targets and the waived baselines - is :data:`RECORDED`: a release whose spec differs from the
last one's in any of them needs ``release --amend REASON``, and the refusal names what differs
(:func:`spec_changes`, a short diff).  The name, the description and the snapshot's separator change nothing
the gate decides and need no amendment.
"""
from __future__ import annotations

import json
from typing import Any, Mapping

__all__ = ["RECORDED", "spec_changes", "changed_keys", "amend_refusal"]

#: the spec's keys the gate reads: changing any of them is an amendment
RECORDED = ("schema", "publisher", "transitions", "adversary", "attacks", "expect", "targets", "waive")

_SHOWN = 3  # changes named in one line
_WIDTH = 70  # characters of one value shown


def _flow(value: Any) -> str:
    """A value as the user wrote it, in YAML's flow style (``{diameter: 5, shape: window}``), cut short."""
    if value is None:
        text = "(none)"
    elif isinstance(value, Mapping):
        text = "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    elif isinstance(value, (list, tuple)):
        text = "[" + ", ".join(_flow(v) for v in value) + "]"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    else:
        text = str(value)
    return text if len(text) <= _WIDTH else text[:_WIDTH - 3] + "..."


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _diff(path: str, old: Any, new: Any, out: list[str]) -> None:
    if _key(old) == _key(new):
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping) and \
            any(k in new and _key(v) == _key(new[k]) for k, v in old.items()):  # a change inside: name its keys
        for k in list(old) + [k for k in new if k not in old]:
            _diff(f"{path}.{k}", old.get(k), new.get(k), out)
        return
    if isinstance(old, list) and isinstance(new, list):
        was, now = [_key(v) for v in old], [_key(v) for v in new]
        removed = [v for v, k in zip(old, was) if k not in now]
        added = [v for v, k in zip(new, now) if k not in was]
        words = ([f"removed {_flow(v)}" for v in removed] + [f"added {_flow(v)}" for v in added]) or ["reordered"]
        out.append(f"{path}: {', '.join(words)}")
        return
    if old is None:
        out.append(f"{path}: added {_flow(new)}")
    elif new is None:
        out.append(f"{path}: removed (was {_flow(old)})")
    else:
        out.append(f"{path}: {_flow(old)} -> {_flow(new)}")


def spec_changes(old: Mapping, new: Mapping) -> list[str]:
    """Every difference of the recorded keys, one short line each (``transitions: {diameter: 5} -> {free:
    true}``, ``expect: removed linking.k >= 5``, ``publisher.m: 2 -> 3``)."""
    out: list[str] = []
    for key in RECORDED:
        _diff(key, old.get(key), new.get(key), out)
    return out


def changed_keys(old: Mapping, new: Mapping) -> list[str]:
    """The recorded keys whose value differs (``ledger DIR`` names them beside an amendment)."""
    return [k for k in RECORDED if _key(old.get(k)) != _key(new.get(k))]


def amend_refusal(n: int, changes: list[str]) -> str:
    """The one line refusing an unamended change: what differs from release ``n``'s spec, and what to do."""
    shown = "; ".join(changes[:_SHOWN]) + (f"; and {len(changes) - _SHOWN} more" if len(changes) > _SHOWN else "")
    return (f"the spec differs from the one release {n} was made with ({shown}): give --amend REASON to record "
            "the change, or restore the spec")
