"""Re-exports the request, which is defined in ``kbench.contract.request``."""

from kbench.contract.request import DEFAULT_SAMPLES as DEFAULT_SAMPLES
from kbench.contract.request import LABEL_MAX as LABEL_MAX
from kbench.contract.request import BadRequest as BadRequest
from kbench.contract.request import RunRequest as RunRequest
