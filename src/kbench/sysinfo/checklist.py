"""The noise checklist: one verdict per noise source, decided from a collected sysinfo dict.

Every check is a pure function of the dict ``collect_sysinfo`` returns (so captured
dicts of other machines can be judged too) and yields a CheckItem with a state:
``ok``, ``noisy``, or ``not available here`` (with the reason), plus one line of advice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

OK = "ok"
NOISY = "noisy"
NOT_AVAILABLE = "not available here"

HIGH_LOAD_PER_CPU = 0.5
"""A 1-minute load average above this many runnable tasks per CPU disturbs a run."""
HOT_CELSIUS = 80.0
"""A thermal zone at or above this temperature is close to throttling on most CPUs."""


@dataclass(frozen=True)
class CheckItem:
    """One line of the checklist: what was looked at, what it is, and what to do."""

    name: str
    state: str
    value: str
    advice: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


Check = Callable[[dict[str, Any]], CheckItem]


def _noise(info: dict[str, Any]) -> dict[str, Any]:
    return info.get("noise") or {}


def _virtual_reason(info: dict[str, Any], what: str) -> str:
    virt = info.get("virtualization") or {}
    return f"{what} in this VM" if virt.get("virtualized") else what


def check_governor(info: dict[str, Any]) -> CheckItem:
    """ok when every CPU's scaling_governor is ``performance``."""
    governors: dict[str, str] | None = _noise(info).get("governor")
    if not governors:
        return CheckItem("governor", NOT_AVAILABLE, _virtual_reason(info, "no cpufreq"),
                         "the frequency is not controlled by this kernel; nothing to do")
    others = sorted({g for g in governors.values() if g != "performance"})
    if not others:
        return CheckItem("governor", OK, f"performance on {len(governors)} CPUs",
                         "the clock stays at its highest non-turbo frequency")
    return CheckItem("governor", NOISY, ", ".join(sorted(set(governors.values()))),
                     "the frequency follows the load: `kbench tune` sets performance on every CPU")


def check_scaling_driver(info: dict[str, Any]) -> CheckItem:
    """Which cpufreq driver manages the frequency (informative: ok when present)."""
    scaling = _noise(info).get("scaling")
    if not scaling:
        return CheckItem("scaling driver", NOT_AVAILABLE, _virtual_reason(info, "no cpufreq"),
                         "no frequency scaling driver is loaded")
    driver = str(scaling.get("driver"))
    status = scaling.get("intel_pstate_status")
    value = f"{driver} ({status})" if status else driver
    advice = (
        "the CPU picks P-states itself (HWP); the performance governor still raises the floor"
        if driver in ("intel_pstate", "amd-pstate-epp") else "the governor decides the frequency"
    )
    return CheckItem("scaling driver", OK, value, advice)


def check_turbo(info: dict[str, Any]) -> CheckItem:
    """ok when turbo/boost is off: turbo frequency depends on temperature and load."""
    turbo = _noise(info).get("turbo")
    if not turbo:
        return CheckItem("turbo", NOT_AVAILABLE,
                         _virtual_reason(info, "no intel_pstate/no_turbo or cpufreq/boost"),
                         "boost cannot be seen or controlled from this kernel")
    if turbo.get("enabled"):
        return CheckItem("turbo", NOISY, f"on ({turbo.get('driver')})",
                         "speed depends on temperature and on the other cores: `kbench tune` turns it off")
    return CheckItem("turbo", OK, f"off ({turbo.get('driver')})", "frequency does not depend on boost headroom")


def check_smt(info: dict[str, Any]) -> CheckItem:
    """ok when SMT is off; noisy when sibling threads are active."""
    noise = _noise(info)
    control = noise.get("smt")
    if control is None or control in ("notsupported", "notimplemented"):
        why = "no SMT control" if control is None else f"SMT {control}"
        return CheckItem("SMT", NOT_AVAILABLE, _virtual_reason(info, why),
                         "siblings (if any, e.g. on the host) are invisible; pin with --cpu")
    if control in ("off", "forceoff") or noise.get("smt_active") == "0":
        return CheckItem("SMT", OK, control, "no sibling thread shares the measuring core")
    return CheckItem("SMT", NOISY, f"{control}, active",
                     "a sibling thread shares the core's caches and ports: keep it idle or "
                     "write off to /sys/devices/system/cpu/smt/control")


def check_aslr(info: dict[str, Any]) -> CheckItem:
    """ok when randomize_va_space is 0 (the same layout every run)."""
    aslr = _noise(info).get("aslr")
    if aslr is None:
        return CheckItem("ASLR", NOT_AVAILABLE, "no /proc/sys/kernel/randomize_va_space",
                         "cannot tell whether addresses are randomised")
    if aslr == "0":
        return CheckItem("ASLR", OK, "off (0)", "stack, heap and mmap addresses repeat between runs")
    return CheckItem("ASLR", NOISY, f"on ({aslr})",
                     "cache and TLB aliasing change from run to run: `kbench tune` sets it to 0")


def _first_cpu(cpu_list: str) -> str:
    """The first CPU of a kernel list such as ``domain,managed_irq,2-3`` (flags skipped)."""
    for part in cpu_list.split(","):
        if part[:1].isdigit():
            return part.split("-")[0]
    return "N"


def check_isolation(info: dict[str, Any]) -> CheckItem:
    """ok when some CPUs are isolated (isolcpus or nohz_full) for the benchmark."""
    noise = _noise(info)
    isolated = noise.get("isolcpus") or noise.get("isolated")
    nohz = noise.get("nohz_full") or noise.get("nohz_full_cpus")
    parts = [f"isolcpus={isolated}"] if isolated else []
    parts += [f"nohz_full={nohz}"] if nohz else []
    if parts:
        return CheckItem("isolation", OK, ", ".join(parts),
                         f"pin the benchmark to an isolated CPU: --cpu {_first_cpu(str(isolated or nohz))}")
    return CheckItem("isolation", NOISY, "none",
                     "the scheduler may run anything on the measuring CPU: boot with "
                     "isolcpus=N nohz_full=N and pin with --cpu N")


def check_irqbalance(info: dict[str, Any]) -> CheckItem:
    """ok when no irqbalance process runs (interrupts stay where they were put)."""
    running = _noise(info).get("irqbalance_running")
    if running is None:
        return CheckItem("irqbalance", NOT_AVAILABLE, "processes of this machine were not listed",
                         "check on the machine itself")
    if running:
        return CheckItem("irqbalance", NOISY, "running",
                         "it moves interrupts between CPUs during a run: stop it and steer IRQs "
                         "away from the measuring CPU (/proc/irq/*/smp_affinity)")
    return CheckItem("irqbalance", OK, "not running", "interrupt affinity stays as set")


def check_load(info: dict[str, Any]) -> CheckItem:
    """ok when the 1-minute load average is at most HIGH_LOAD_PER_CPU per CPU."""
    load = _noise(info).get("loadavg_1m")
    cpus = (info.get("cpu") or {}).get("count") or 1
    if load is None:
        return CheckItem("load", NOT_AVAILABLE, "no /proc/loadavg", "cannot tell whether the machine is busy")
    value = f"{load:.2f} on {cpus} CPUs"
    if load / cpus > HIGH_LOAD_PER_CPU:
        return CheckItem("load", NOISY, value, "other work competes for CPUs and caches: wait or stop it")
    return CheckItem("load", OK, value, "the machine is quiet")


def check_thermal(info: dict[str, Any]) -> CheckItem:
    """ok when every visible thermal zone is below HOT_CELSIUS."""
    zones = [z for z in _noise(info).get("thermal") or [] if z.get("temp_c") is not None]
    if not zones:
        return CheckItem("thermal", NOT_AVAILABLE, _virtual_reason(info, "no /sys/class/thermal zones"),
                         "throttling cannot be seen from this kernel")
    hottest = max(zones, key=lambda z: float(z["temp_c"]))
    value = f"hottest {hottest['temp_c']:.0f} °C ({hottest['type']}), {len(zones)} zones"
    if float(hottest["temp_c"]) >= HOT_CELSIUS:
        return CheckItem("thermal", NOISY, value, "close to throttling: let it cool, check the fans")
    return CheckItem("thermal", OK, value, "far from throttling")


CHECKS: tuple[Check, ...] = (
    check_governor, check_scaling_driver, check_turbo, check_smt, check_aslr,
    check_isolation, check_irqbalance, check_load, check_thermal,
)
"""The checklist, in the order it is shown."""


def noise_checklist(info: dict[str, Any]) -> list[CheckItem]:
    """Every check of CHECKS applied to one collected sysinfo dict."""
    return [check(info) for check in CHECKS]
