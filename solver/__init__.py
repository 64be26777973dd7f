"""The exact engines the attacks and the publishers' self-checks run, one folder per engine, and where they run.

* :mod:`.correspondence` - crack sizes of the correspondence attacks (Fung et al., 002): min-cost flows for two
  releases, CP-SAT generators as buddy chains for more;
* :mod:`.worlds` - possible worlds of a release sequence (Shmueli & Tassa, 004; Wong et al., 001):
  linkability, world counts, breach and linkage probabilities, witness worlds;
* :mod:`.update` - joint possible worlds of releases with internal updates (Li & Zhou, 000, section III);
* :mod:`.executor` - where independent components are solved: this process, local worker processes or a Dask
  cluster (every engine's tasks are module-level functions of plain data, so any of them can run them).

The engines take plain arrays and return plain results; the attacks (``attacks/``) read releases and build
their reports.
"""
