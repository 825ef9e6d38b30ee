"""On-demand performance benchmarks (never part of the default test run).

``HQ_REF_BIN_DIR=… uv run python -m benchmarks.run`` compares this tracker with a reference build
and rewrites docs/performance.md (``python -m benchmarks.report`` re-renders it from the saved
JSON). ``HQ_OURS_PYTHON=…/bin/python`` runs our commands on another interpreter: use one built
as the image's is (profile-guided and link-time optimised), or our tracker is measured with
~10 % more CPU per worker request than it ships with (benchmarks/notes/optimisations.md, row 47).
``uv run python -m benchmarks.internals`` is the raw-SQL ceiling, scale and profile set.
"""
