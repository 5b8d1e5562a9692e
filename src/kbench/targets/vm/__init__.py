"""The VM target: boot a kernel in qemu with a small initramfs and drive it.

- ``resolve_kernel(spec, cache_dir)``: ``deb:<release>``, a bzImage or a build tree
- ``build_module(src_dir, kernel, cache_dir)``: out-of-tree modules, cached by content
- ``build_initramfs(kernel, files, cache_dir)``: busybox + kbench-agent + kbench-probe
- ``build_tools_cpio(tools, cache_dir)``: host tools + their libraries, an extra cpio
- ``VmSession(kernel, ...)``: boots qemu (KVM when it works, else TCG) and runs
  commands through the guest agent over virtio-serial

See docs/VM.md.
"""

from kbench.cachefiles import default_cache_dir

from .errors import (
    GuestRequestError,
    InitramfsError,
    KernelResolveError,
    ModuleBuildError,
    VmError,
    VmTargetError,
)
from .initramfs import build_initramfs
from .kernel import KernelImage
from .modbuild import build_module
from .resolve import resolve_kernel
from .session import ExecResult, VmSession
from .tools import ToolNotOnHost, build_tools_cpio, combine_initramfs
from .usermod import build_user_module, kbench_ko_for

__all__ = [
    "ExecResult",
    "GuestRequestError",
    "InitramfsError",
    "KernelImage",
    "KernelResolveError",
    "ModuleBuildError",
    "ToolNotOnHost",
    "VmError",
    "VmSession",
    "VmTargetError",
    "build_initramfs",
    "build_module",
    "build_tools_cpio",
    "build_user_module",
    "combine_initramfs",
    "default_cache_dir",
    "kbench_ko_for",
    "resolve_kernel",
]
