"""A kernel bisection or watch with no build script (``--kernel-tree REPO``): kbench builds each commit.

``KernelLab`` with kbench's own build in place of the user's command: a commit's kernel is
``tree:REPO@SHA`` (``kbench.kernels.per_commit``), built by ``build_kernel`` in kbench's
workspace of the tree and config (incremental: the last commit's objects are reused; a
kernel built before by any command comes from the cache in under a second). A build error
skips the commit with ``build failed: <the first compiler error, file and line>``. The rest
is ``KernelLab``'s: the kernel is booted once (a panic or hang skips it too), every trial
boots it afresh, and each run stores the kernel's config digest and commit.
"""

from __future__ import annotations

from pathlib import Path

from kbench.bisect.git import Worktrees
from kbench.bisect.kernel_lab import KernelLab, _Kernel
from kbench.bisect.labkit import DEFAULT_BUILD_TIMEOUT_S
from kbench.kernels.build import build_kernel
from kbench.kernels.built import BuiltKernel
from kbench.kernels.errors import KernelError
from kbench.kernels.make import Silent
from kbench.kernels.per_commit import COMMIT_FEATURES, TREE_IMAGE, build_failure, commit_recipe, commit_spec
from kbench.store.db import Store
from kbench.targets.vm_target import VmTarget

FEATURES_ASKED = ("kbench.ko",)
"""What a commit's guest asks for beyond its own needs, so that it resolves to ``COMMIT_FEATURES``' kernel."""


class KernelTreeLab(KernelLab):
    def __init__(
        self, store: Store, *, tag: str, repo: Path, worktrees: Worktrees, benchmark: str, params: dict[str, str],
        samples: int, seed: int, cache_dir: Path | None = None, boot_timeout: float = 120.0, batch: int | None = None,
        extra_tags: tuple[str, ...] = (), build_timeout_s: float = DEFAULT_BUILD_TIMEOUT_S, metric: str = "time",
    ):
        super().__init__(store, tag=tag, repo=repo, worktrees=worktrees, build="", image=".", benchmark=benchmark,
                         params=params, samples=samples, seed=seed, cache_dir=cache_dir, boot_timeout=boot_timeout,
                         batch=batch, extra_tags=extra_tags, build_timeout_s=build_timeout_s, metric=metric)
        self.kernel_features = FEATURES_ASKED
        asked = VmTarget(TREE_IMAGE, with_module=self.kind.in_kernel, kernel_features=FEATURES_ASKED).kernel_features()
        if asked != set(COMMIT_FEATURES):  # the guest would resolve its tree: spec to another recipe's kernel
            raise ValueError(f"{self.bench.name} needs a kernel built for {sorted(asked)}, not "
                             f"{sorted(COMMIT_FEATURES)}: it cannot be bisected with --kernel-tree")
        self.recipe = commit_recipe()
        self.built: dict[str, BuiltKernel] = {}  # per commit: the kernel kbench built (or found built)

    def build(self, commit: str) -> str | None:
        self._forget(commit)
        try:
            built = build_kernel(self.repo, commit, self.recipe, cache_dir=self.cache_dir, progress=Silent())
        except KernelError as exc:
            return build_failure(exc)
        kernel = _Kernel(spec=built.image, modules_dir=None, kept_worktree=False,
                         tree_spec=commit_spec(self.repo, commit))
        failed = self._boot_check(commit, kernel)
        if failed is not None:
            return failed
        self.built[commit] = built
        self._kernels[commit] = kernel
        return None

    def _reusable(self, commit: str) -> _Kernel | None:
        return None  # build() finds a kernel built before in the cache (and boot-checks it again)

    def _recipe(self) -> dict[str, str | None]:
        return {"build": "kbench", "image": TREE_IMAGE, "modules": None}
