"""Benchmarks of your own in kernel context: scaffold modules using kbench.h (``scaffold``).

Building one for a kernel is the VM target's (``kbench.targets.vm.usermod``).
"""
