"""kbench.kinds: one plug-in per kind of benchmark, behind one protocol (``base.Kind``).

- probe   user-space workloads of ``kbench-probe run`` (``syscall.*``, ``command``)
- kfunc   kernel functions timed inside kbench.ko (``kfunc.*``)
- scale   will-it-scale: N tasks loop a testcase (``will-it-scale.*``)
- suite   whole tools: hackbench, stress-ng, fio, sysbench (``kbench.suites``)
- trace   kernel functions and tracepoint keys timed in place (``kbench trace``)

A kind knows its benchmarks and parameters, its primary metric, and how to turn its
output into metric series; nothing else in kbench switches on a kind's name.
``registry`` finds a kind by name or by the output it wrote. Each kind's package
imports only light modules at first; what needs numpy is imported when used.
"""
