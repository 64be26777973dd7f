"""The possible-worlds engine: every world a release sequence allows, exactly where it can be, bounded where not.

Papers: Shmueli & Tassa (``../shared/papers/004_db68606f48036092.txt``, section 3: possible worlds, l-linkability,
the linkage probability of Definition 3.2) and Wong et al. (``../shared/papers/001_15972b600e17f079.txt``: the
breach probability ``p(o, s, k)`` of Definition 2 and its localized form).

Modules:

* :mod:`.problem` - the consistency graph, its blocks and individual types (:func:`build_problem`);
* :mod:`.analysis` - the entry point (:func:`analyze` -> :class:`WorldsAnalysis`);
* :mod:`.component` - one block solved from plain data, as a task any executor runs;
* :mod:`.reduce` - flow propagation on a block: prune what no world uses, split what is independent;
* :mod:`.matching` - perfect matchings of one release (existence, matchable edges, permanents);
* :mod:`.linkability` - exact linkability and the CP-SAT type-world model;
* :mod:`.counting` - world counts of one block (definitions and algorithms in its docstring);
* :mod:`.sampling` - the Markov-chain estimate for blocks beyond the enumeration budget;
* :mod:`.witness` - a world of a block in which an individual has a value;
* :mod:`.oracle` - every world by plain enumeration (the tests' reference on tiny instances).

Signature: ``analyze(build_problem(view)) -> WorldsAnalysis``; a block's work is
``solve_component(block, n_values, ...)``.

Tests: ``tests/attacks/test_possible_worlds.py`` (the engine against :mod:`.oracle` and the closed forms),
``tests/solver/test_linkability_flow.py``, ``tests/solver/test_executor.py``; the brute force over worlds with
linking columns is ``tests/bruteforce.py`` (``sequence_worlds``).
"""
from multirelease.registry import lazy_names

__all__ = ["analyze", "WorldsAnalysis", "build_problem", "WorldsProblem"]
__getattr__ = lazy_names(__name__, {"analyze": "analysis", "WorldsAnalysis": "analysis", "build_problem": "problem",
                                    "WorldsProblem": "problem"})
