"""Reliability: crash, fault, load, hostile-input and concurrency tests (docs/RELIABILITY.md)."""
