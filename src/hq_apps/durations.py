"""How every human-facing view splits a duration: the largest unit and the next one.

The dashboard (``1 h 22 min``), ``hqctl`` (``1h22m``) and ``tracker monitor`` (``1h05m``) spell
the units differently, but all read a queue the same way: two units are enough.
"""

from __future__ import annotations

DAY_S = 86400


def two_units(seconds: int) -> list[tuple[int, str]]:
    """``[(1, "d"), (3, "h")]``, ``[(2, "h"), (5, "m")]``, ``[(3, "m"), (4, "s")]`` or
    ``[(42, "s")]``: the largest non-zero unit of d/h/m/s and the one below it."""
    days, rest = divmod(int(seconds), DAY_S)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return [(days, "d"), (hours, "h")]
    if hours:
        return [(hours, "h"), (minutes, "m")]
    if minutes:
        return [(minutes, "m"), (secs, "s")]
    return [(secs, "s")]
