"""Retriever options tried and not shipped: measured, kept runnable, imported by no shipped module.

A tried retriever joins the registry when its module's `register()` is called (by the benchmark
that measured it, or a test); `retriever/registry.py` never imports this package.
"""
