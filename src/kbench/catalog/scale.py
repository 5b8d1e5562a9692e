"""Re-exports the will-it-scale defaults (``kbench.kinds.scale.catalog``) and ``primary_metric``."""

from kbench.catalog.benchmarks import primary_metric as primary_metric
from kbench.kinds.scale.catalog import DEFAULT_DURATION_S as DEFAULT_DURATION_S
from kbench.kinds.scale.catalog import DEFAULT_WARMUP_S as DEFAULT_WARMUP_S
