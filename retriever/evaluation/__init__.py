"""Metrics, per-query evaluation, the benchmark table, bootstrap intervals, robustness and cost."""
