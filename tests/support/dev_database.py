"""Clean-up for tests that run ``tracker dev``: as root its database lives outside the test's
directory, under ``/var/lib/savewebhq-dev/<key>`` (see ``hq_adapters.embedded_root``)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from hq_adapters.embedded_root import ROOT_BASE, root_data_dir


def remove_root_dev_database(work: Path) -> None:
    """Delete the root-mode database of a ``tracker dev`` run in ``work`` (no-op unless root)."""
    if os.geteuid() != 0:
        return
    project = root_data_dir(work / "data" / "postgres").parent
    assert project.parent == ROOT_BASE
    shutil.rmtree(project, ignore_errors=True)
