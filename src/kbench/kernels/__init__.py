"""Kernels built from source: the config (minimal, fragments, the check that every option
asked for survived), out-of-tree incremental builds in kbench's own directories, and the
cache of built kernels keyed by (source tree id, config recipe digest, compiler).

``kernels.build.build_kernel`` is the one entry point; ``kernels.spec`` reads a
``tree:PATH[@REV]`` kernel spec; ``kernels.diffconfig`` compares two configs. See
docs/kernels.md.
"""
