"""Hypothesis strategies shared by every property test of multirelease.

Everything is small by default (tables of 1-30 rows, hierarchies of 2-12 leaves) so that property tests
stay fast; every size is a parameter.  The building blocks:

* hierarchies: :func:`hierarchy_specs` / :func:`hierarchies` (random nested taxonomies, built with
  :meth:`Hierarchy.from_nested`), :func:`numeric_hierarchies` (:meth:`Hierarchy.numeric`),
  :func:`ordered_hierarchies` (taxonomies over ascending, gapped numbers: intervals are valid values);
* :func:`schemas` - 1-4 quasi-identifiers (``hierarchy`` / ``interval`` / ``subsets`` models), one
  sensitive attribute over a small flat domain, optionally an identifier, in a random column order;
* :func:`raw_tables` - a validated :class:`Table` of a schema;
* releases of a raw table, each drawn as ``(release, truth)``: :func:`cut_releases` (global recoding by a
  cut), :func:`local_recodings` (every cell generalized on its own), :func:`mondrian_regions` (a random
  strict partition of the QI space into boxes);
* :func:`update_streams` - a list of :class:`Change` that applies in sequence without error.

Release rows come in a random order; ``truth.person[i]`` is the identifier behind row ``i``.

The strategies live in three modules, one per kind of thing drawn - :mod:`strategies_tables` (hierarchies,
schemas, tables, the label oracle), :mod:`strategies_releases` (releases of a table) and
:mod:`strategies_dynamics` (update streams, transition models, SUG layers, stream parameters) - and are
re-exported here: tests import from ``strategies``.
"""
from __future__ import annotations

from strategies_dynamics import stream_params, sug_layers, transition_models, update_streams
from strategies_releases import cut_releases, generalized_releases, local_recodings, mondrian_regions
from strategies_tables import (any_hierarchies, flatten_leaves, hierarchies, hierarchy_specs, leaf_set,
                               numeric_hierarchies, ordered_hierarchies, raw_tables, schemas, schemas_and_tables)

__all__ = [
    "hierarchy_specs", "hierarchies", "numeric_hierarchies", "ordered_hierarchies", "any_hierarchies",
    "schemas", "raw_tables", "schemas_and_tables",
    "cut_releases", "local_recodings", "mondrian_regions", "generalized_releases",
    "update_streams", "transition_models", "sug_layers", "stream_params",
    "leaf_set", "flatten_leaves",
]
