"""Run every kbench benchmark script in this folder, one after another (`make bench`).

Each script prints its own table; figures worth keeping go to docs/PERFORMANCE.md with
the command that produced them. Run on a quiet machine: these are measurements.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failed = []
    for script in sorted(HERE.glob("*.py")):
        if script.name in ("run_all.py", "__init__.py"):
            continue
        print(f"\n=== {script.name} ===", flush=True)
        if subprocess.run([sys.executable, str(script)]).returncode != 0:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
