"""Prometheus metrics (issue 14), off unless ``tracker serve --metrics-listen`` is given.

Process-local counters and histograms live in :mod:`hq_apps.metrics.instruments`; with
``PROMETHEUS_MULTIPROC_DIR`` set (``serve --processes N``) prometheus_client writes them to
per-process files and the one process that binds the metrics address serves their aggregate.
Job counts, the oldest todo age and expired leases are read from the database at scrape time
(:mod:`hq_apps.metrics.database`), so they are the same whichever process answers.
"""
