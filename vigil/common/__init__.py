"""Leaf helpers every layer shares: durations, HOST:PORT, YAML with lines, the Prometheus API client.

This package imports nothing else from vigil (tests/test_layering.py keeps it so), so the domain
packages (`exporters`, `rules`, `notifier`, `oncall`, `aiops`) and the CLI may all use it.
"""
