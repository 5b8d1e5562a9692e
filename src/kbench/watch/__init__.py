"""kbench.watch: follow branches, measure every commit, and name a culprit only after measuring it again.

- git        branch heads, first-parent history, force-pushes, reverts
- loop       one poll: new commits measured, candidates turned into verdicts, mails
- series     a branch's series of each watched instance (history's rules, the job's control)
- verdicts   candidate → confirmed (side by side) → bisected → verified, or dropped
- measurer   where it measures: this machine (``LocalMeasurer``); ``fleet``: fleet workers
- mail       the RFC 5322 mail of a confirmed regression (0-Day layout); ``outbox`` posts it
- report     ``kbench watch``'s JSON document and text summary
"""
