"""History over every stored run: series, change points, regression and release reports.

A series is every complete run of one benchmark with the same parameters, on one
machine and target kind, seen through one metric; its points are the runs' medians in
the order they were started, each carrying the version it measured (kernel release,
commit, label). Change points come from E-divisive means with a t-test
(``edivisive.py``), imported only when a command needs them.
"""
