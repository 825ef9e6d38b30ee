"""One split of a duration into two units, spelled three ways by the views."""

from __future__ import annotations

import pytest

from hq_apps.cli.hqctl.render import duration
from hq_apps.cli.ops_render import age
from hq_apps.durations import two_units
from hq_apps.web.progress_view import eta_text


@pytest.mark.parametrize(
    ("seconds", "units", "web", "hqctl", "monitor"),
    [
        (42, [(42, "s")], "42 s", "42s", "42s"),
        (184, [(3, "m"), (4, "s")], "3 min 4 s", "3m4s", "3m04s"),
        (4920, [(1, "h"), (22, "m")], "1 h 22 min", "1h22m", "1h22m"),
        (90061, [(1, "d"), (1, "h")], "1 d 1 h", "1d1h", "1d01h"),
    ],
)
def test_every_view_spells_the_same_split(seconds, units, web, hqctl, monitor) -> None:
    assert two_units(seconds) == units
    assert (eta_text(seconds), duration(seconds), age(seconds)) == (web, hqctl, monitor)
