"""Benchmarks of your own in kernel context: scaffold and build modules using kbench.h."""
