"""Error hierarchy. Every message names the problem and, where there is one, the fix."""


class KanonError(ValueError):
    """Base class of every error raised by kanon-duckdb."""


class InvalidParameterError(KanonError):
    """A parameter is out of range or of the wrong kind (k < 1, unknown algo, ...)."""


class UnknownObjectError(KanonError):
    """A table or column named by the user does not exist."""


class TaxonomyError(KanonError):
    """A taxonomy tree is malformed or does not cover the data."""


class DataError(KanonError):
    """The data cannot be anonymized as asked (empty table, non-numeric text in a numeric QI)."""


class InfeasibleError(KanonError):
    """No solution satisfies the constraints (e.g. k-anonymity within the suppression limit)."""


class UnsupportedQueryError(KanonError):
    """The query rewriter met a SQL construct it cannot estimate on anonymized data."""


class ConcurrentChangeError(KanonError):
    """The source table changed while k_anonymize ran (or the run's row state was dropped);
    running it again is the fix."""


class RunInterrupted(KanonError):
    """The run was stopped by ``con.interrupt()`` or Ctrl-C; nothing was written or recorded."""


class ReadOnlyDatabaseError(KanonError):
    """Something must be written into a database opened read-only (``readonly.require_writable``)."""
