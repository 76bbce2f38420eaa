"""Fixtures and probes that tests and benchmarks share (importable, no sys.path edits)."""
