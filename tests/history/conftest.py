"""History tests: change points need nothing beyond numpy and scipy (kbench.history.edivisive)."""
