"""Re-exports the kfunc catalog, which lives in ``kbench.kinds.kfunc.catalog``."""

from kbench.kinds.kfunc.catalog import COMMON_PARAMS as COMMON_PARAMS
from kbench.kinds.kfunc.catalog import KBENCH_ONLY_PARAMS as KBENCH_ONLY_PARAMS
from kbench.kinds.kfunc.catalog import benchmarks_in as benchmarks_in
from kbench.kinds.kfunc.catalog import kfunc_benchmarks as kfunc_benchmarks
