"""What every script in benchmarks/ shares: the harness (arguments, config, provenance, the
results writer), the paired bootstrap, and the results index."""
