"""Peak memory of `ecomrlve generate` on a 100k-product catalog (issue 8: target <= 3 GB).

    python benchmarks/memory.py                       # 1,000,000 tasks (minutes on 2 cores)
    python benchmarks/memory.py --tasks 100000 --tasks 300000
    python benchmarks/memory.py --tasks 50000 --in-memory   # also the old all-rows-in-RAM path

Each run is a fresh `ecomrlve generate` process (and its worker processes) on the same catalog;
the peak is the largest sum of RSS over the whole process tree, polled from /proc every 50 ms.
`generate` streams: each finished chunk (250 tasks) is spilled to a hidden Parquet file, and the
partitions are published one at a time at the end, so the peak should not grow with --tasks.
`--in-memory` runs `generate_tasks` + `write_tasks` (every row in one frame) for comparison.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MB = 3 * 1024
PAGE = os.sysconf("SC_PAGE_SIZE")

IN_MEMORY = """
import sys
from ecomrlve.generators import generate_tasks, write_tasks
if __name__ == "__main__":
    data, n, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    df, report = generate_tasks(data, n, seed=1, workers=workers)
    write_tasks(data, df, "gen_inmem")
"""


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        tree.setdefault(int(fields[1]), []).append(int(entry))  # ppid -> pids
    return tree


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * PAGE / 2**20
    except OSError:
        return 0.0


def tree_rss_mb(root: int) -> tuple[float, float]:
    """(RSS of the whole tree under `root`, RSS of `root` alone) in MB."""
    tree, total, stack = _children(), 0.0, [root]
    while stack:
        pid = stack.pop()
        total += _rss_mb(pid)
        stack.extend(tree.get(pid, []))
    return total, _rss_mb(root)


def measure(argv: list[str]) -> tuple[float, float, float]:
    """Run `argv`; return (wall s, peak tree RSS MB, peak main-process RSS MB)."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak_tree = peak_main = 0.0
    while proc.poll() is None:
        tree, main = tree_rss_mb(proc.pid)
        peak_tree, peak_main = max(peak_tree, tree), max(peak_main, main)
        time.sleep(0.05)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv[:4])} failed: {proc.stderr.read()[-2000:]}")
    return wall, peak_tree, peak_main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, action="append", help="repeatable")
    parser.add_argument("--products", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--data", type=Path, help="catalog folder to reuse (default: temp)")
    parser.add_argument("--in-memory", action="store_true", help="also the all-rows path")
    args = parser.parse_args()
    sizes = args.tasks or [1_000_000]
    if any(n <= 0 for n in sizes) or args.products <= 0 or args.workers < 1:
        sys.exit("error: --tasks, --products and --workers must be positive")

    root = args.data or Path(tempfile.mkdtemp(prefix="ecomrlve-memory-"))
    ecomrlve = [sys.executable, "-m", "ecomrlve"]
    if not (root / "catalog" / "products.parquet").exists():
        subprocess.run(
            [*ecomrlve, "catalog", "--products", str(args.products), "--data", str(root)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    rows = []
    try:
        for n in sizes:
            for mode in ("streaming", "in-memory") if args.in_memory else ("streaming",):
                if mode == "streaming":
                    argv = [*ecomrlve, "generate", "--tasks", str(n), "--seed", "1"]
                    argv += ["--workers", str(args.workers), "--run", "gen_mem"]
                    argv += ["--data", str(root)]
                else:
                    script = root / "in_memory.py"
                    script.write_text(IN_MEMORY)
                    argv = [sys.executable, str(script), str(root), str(n), str(args.workers)]
                wall, tree, main_rss = measure(argv)
                rows.append((n, mode, wall, n / wall, tree, main_rss))
                for path in (root / "tasks").glob("scenario=*/difficulty=*/gen_*.parquet"):
                    path.unlink()  # the next size starts from the catalog alone
    finally:
        if args.data is None:
            shutil.rmtree(root, ignore_errors=True)

    header = (
        f"{'tasks':>10} {'mode':>10} {'wall s':>8} {'tasks/s':>8} {'peak RSS MB':>12} "
        f"{'main MB':>8} {'target MB':>10}  ok"
    )
    print(f"ecomrlve generate, {args.products:,} products, {args.workers} worker(s)")
    print(header)
    for n, mode, wall, rate, tree, main_rss in rows:
        ok = "yes" if tree <= TARGET_MB else "NO"
        print(
            f"{n:>10,} {mode:>10} {wall:>8.1f} {rate:>8,.0f} {tree:>12,.0f} {main_rss:>8,.0f} "
            f"{TARGET_MB:>10,}  {ok}"
        )


if __name__ == "__main__":
    main()
