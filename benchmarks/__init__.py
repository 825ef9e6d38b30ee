"""On-demand performance benchmarks (never part of the default test run).

``uv run python -m benchmarks.run [--quick]`` runs the set and rewrites docs/performance.md.
"""
