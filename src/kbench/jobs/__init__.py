"""Job files: YAML descriptions of what to measure, validated whole, expanded into instances.

See docs/jobs.md for the format. ``expand_job`` is the entry point; each ``JobInstance``
converts to the engine's ``RunRequest``.
"""

from kbench.jobs.expand import expand_job, is_job_file, job_files
from kbench.jobs.instance import JobInstance, varying_keys
from kbench.jobs.problems import JobError, JobProblem

__all__ = ["JobError", "JobInstance", "JobProblem", "expand_job", "is_job_file", "job_files", "varying_keys"]
