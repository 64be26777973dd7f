"""Witness worlds of the possible-worlds engine (:mod:`solver.worlds.counting`): one world of a block in which a given
individual takes a given value (Shmueli & Tassa, 004, Definition 3.1: the values and, per release, the
bijection to the release's records), for the attack's ``worst`` entries."""
from __future__ import annotations

from .linkability import DEFAULT_TIME_LIMIT, _block_values, _TypeWorldModel
from .problem import Block, WorldsProblem

__all__ = ["witness_world"]


def witness_world(problem: WorldsProblem, block: Block, individual: int, value: int, *,
                  time_limit: float = DEFAULT_TIME_LIMIT) -> dict | None:
    """A world of the block in which ``individual`` (global index) takes ``value``: per spanned release, the
    value of every individual of the block and the release row (0-based) it is matched to.

    Returns ``{"releases": [{"release": i, "assignment": {id: {"value": s, "row": r}}}]}`` or ``None``."""
    t = next((k for k, mem in enumerate(block.members) if individual in set(mem.tolist())), None)
    if t is None:
        return None
    cand = _block_values(problem, block)
    model = _TypeWorldModel(block, cand)
    if (t, value) in model.fixed:  # the type's one value: any world
        status, m, solver = model.solve(time_limit)
    elif (t, value) in model.m:
        status, m, solver = model.solve(time_limit, [model.m[t, value] >= 1])
    else:
        return None
    if status != "feasible":
        return None
    # individual values: the target first
    vals = {}
    for tt, mem in enumerate(block.members):
        order = list(mem.tolist())
        if tt == t:
            order.remove(individual)
            order.insert(0, individual)
        seq = []
        if tt == t:
            seq.append(value)
            rest = dict((v, c - (1 if v == value else 0)) for (x, v), c in m.items() if x == tt)
        else:
            rest = {v: c for (x, v), c in m.items() if x == tt}
        for v in sorted(rest):
            seq.extend([v] * rest[v])
        for p, v in zip(order, seq):
            vals[p] = v
    out = []
    for k, r in enumerate(block.releases):
        g = problem.releases[r]
        flows = {e: int(solver.value(var)) for e, var in model.flows[k].items()}
        # members of each (type, value) take the groups' rows in turn
        free_rows = {int(lg): list(g.group_rows[int(gg)].tolist()) for lg, gg in enumerate(block.groups[k])}
        assign = {}
        present = set(g.people.tolist())
        edges = block.edges[k]
        for tt, mem in enumerate(block.members):
            if not block.present[tt, k]:
                continue
            by_v: dict = {}
            for p in mem.tolist():
                if p in present:
                    by_v.setdefault(vals[p], []).append(p)
            for e, c in flows.items():
                if c <= 0 or edges[e, 0] != tt:
                    continue
                lg = int(edges[e, 1])
                v = int(block.group_value[k][lg])
                for _ in range(c):
                    p = by_v[v].pop()
                    assign[str(problem.individuals[p])] = {"value": str(problem.values[v]),
                                                           "row": int(free_rows[lg].pop(0))}
        out.append({"release": g.index, "assignment": dict(sorted(assign.items()))})
    return {"releases": out}
