"""Benchmarks: run with `make bench`; results go to docs/benchmarks.md."""
