"""kbench.bisect: find the commit that changed a benchmark, with a statistical oracle.

- search   which commit next, and the answer (binary search with skips; pure)
- oracle   classify a commit's trials against the good and bad references
- driver   the bisection: initial check, steps, re-check, state after every step
- git      worktrees and commit metadata
- lab      the real measurements: build in a worktree, trials of the ``command`` benchmark
"""
