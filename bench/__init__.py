"""Benchmarks, one command each (`python -m bench.NAME --help`); see docs/BENCHMARKS.md."""
