"""Benchmark suites, a resumable runner, an SQLite results store and reports (shared/DESIGN.md §4)."""
