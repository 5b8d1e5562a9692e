"""Store ingest rate: samples per second written by Store.finish_run (goal >= 10^7/s).

Usage: .venv/bin/python benchmarks/store_ingest.py [--samples N] [--repeat R]
Writes 10^7 realistic per-sample tick counts (lognormal around 2000 ticks) into a fresh
SQLite file, R times, and prints the median rate and the compression ratio.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from kbench.store.db import Store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    ticks = rng.lognormal(np.log(2000), 0.2, size=args.samples).astype(np.uint64)
    rates, read_rates = [], []
    ratio = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            db = Path(tmp) / f"ingest{i}.db"
            store = Store.open(f"sqlite:///{db}")
            run_id = store.begin_run(
                benchmark="bench", metric="bench.latency", unit="ns", direction="lower",
                params={}, request={}, sysinfo=None, target=None,
            )
            start = time.perf_counter()
            store.finish_run(run_id, status="complete", columns={"ticks": ticks})
            rates.append(args.samples / (time.perf_counter() - start))
            start = time.perf_counter()
            loaded = store.load_samples(run_id)["ticks"]
            read_rates.append(args.samples / (time.perf_counter() - start))
            assert loaded.size == args.samples
            ratio = ticks.nbytes / db.stat().st_size
    print(f"samples per run      {args.samples}")
    print(f"ingest (median of {args.repeat}) {statistics.median(rates) / 1e6:.1f} M samples/s")
    print(f"load   (median of {args.repeat}) {statistics.median(read_rates) / 1e6:.1f} M samples/s")
    print(f"compression          {ratio:.2f}x of raw u64")


if __name__ == "__main__":
    main()
