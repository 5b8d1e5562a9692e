"""kbench.builds: a commit built in a worktree of kbench's own, its job run there, two builds compared.

- worktree  build a commit with the user's command (the user's checkout is never touched)
- job       run a job's instances on a build (``cmd: ./prog`` is the commit's program)
- compare   two builds measured side by side with the interleaved design of ``kbench compare``

``kbench watch`` measures commits through these, here or on a fleet worker.
"""
