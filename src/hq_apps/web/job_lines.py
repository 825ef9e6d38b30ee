"""The dashboard's enqueue box in its second form: plain values (URLs), one per line.

The spec's form field ``jobs_json`` holds one JSON array of 1-256 jobs (§5.4); operators mostly
paste URLs, so text that does not start with ``[`` (or ``{``, a JSON mistake worth an error)
is read as values instead: blank lines
skipped, each other line (trimmed: pasted text often carries trailing spaces) one job
``{"value": line}``, and on an ``external_id`` project the
stable ``j1_`` ID of the value, as ``hqctl enqueue`` and ``source pack`` give it. The same
1-256 job limit applies.
"""

from __future__ import annotations

from hq_apps.web.forms import JOBS_INVALID, MAX_FORM_JOBS, FormError, job_batch
from hq_domain.errors import HqError
from hq_domain.ids import default_job_id
from hq_domain.jobs import JobSpec
from hq_domain.projects import IdentityMode
from hq_domain.validation import validate_job_spec


def parse_enqueue_box(raw: str, mode: IdentityMode) -> list[JobSpec]:
    """JSON array (spec) or values one per line; FormError with the line at fault."""
    if raw.lstrip()[:1] in ("[", "{"):
        return job_batch(raw)
    lines = [(n, line.strip()) for n, line in enumerate(raw.split("\n"), 1)]
    values = [(n, line) for n, line in lines if line]
    if not 1 <= len(values) <= MAX_FORM_JOBS:
        raise FormError(f"{JOBS_INVALID}: expected 1-256 values (one per line) or a JSON array")
    specs = []
    for number, value in values:
        job_id = default_job_id(None, value) if mode is IdentityMode.EXTERNAL_ID else None
        try:
            specs.append(validate_job_spec(value=value, id=job_id))
        except HqError as exc:
            raise FormError(f"{JOBS_INVALID}: line {number}: {exc.message}") from None
    return specs
