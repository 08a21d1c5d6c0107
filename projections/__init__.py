"""Pure folds from a session's events to the views built on them (the live context, the audit
timeline, token totals). No I/O: everything a fold needs was recorded in the events.

The folds arrive with the projections issue; the package exists now so the dependency
direction `store -> projections -> events` is fixed from the start.
"""

__all__: list[str] = []
