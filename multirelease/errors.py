"""The small exception hierarchy of multirelease.

Every problem a user can fix (a missing file, a malformed value, a parameter out of range) is an
:class:`InputError`: it names the file, the key inside it and what is wrong, and the CLI prints it as one
line and exits with code 2.  Everything else is a bug and keeps its traceback.
"""
from __future__ import annotations

__all__ = ["MultireleaseError", "InputError", "SolverError"]


class MultireleaseError(Exception):
    """Base class of every error multirelease raises on purpose."""


class InputError(MultireleaseError):
    """Bad input: the CLI answers with exit code 2 and :meth:`one_line`.

    Parameters
    ----------
    problem : str
        What is wrong, in a few words ("is not in the hierarchy of 'age'").
    file : str, optional
        The file the input came from (a scenario, a release CSV, a hierarchy file).
    key : str, optional
        Where inside the file: a YAML key path (``releases[1].k``), a CSV column and row.
    """

    def __init__(self, problem: str, *, file: str | None = None, key: str | None = None):
        self.problem = problem
        self.file = file
        self.key = key
        super().__init__(self.one_line())

    def __reduce__(self):  # from a worker process as it was raised there: problem, file and key apart
        return _input_error, (type(self), self.problem, self.file, self.key)

    def one_line(self) -> str:
        parts = [p for p in (self.file, self.key) if p]
        where = ": ".join(parts)
        return f"{where}: {self.problem}" if where else self.problem

    def located(self, *, file: str | None = None, key: str | None = None) -> "InputError":
        """The same error with a file / key filled in where it had none (innermost location wins)."""
        if key and self.key and not self.key.startswith(key):
            key = f"{key}.{self.key}"
        elif self.key:
            key = self.key
        return InputError(self.problem, file=self.file or file, key=key)


class SolverError(MultireleaseError):
    """An exact engine failed in a way that is not a timeout (model invalid, solver error status)."""


def _input_error(cls: type, problem: str, file: str | None, key: str | None) -> InputError:
    return cls(problem, file=file, key=key)
