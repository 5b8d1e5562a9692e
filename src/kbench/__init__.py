"""kbench: a Linux kernel performance lab."""

__version__ = "0.1.0"
