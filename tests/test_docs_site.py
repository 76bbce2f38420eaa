"""The documentation site builds strictly (issue 45): `mkdocs build --strict` fails on a broken
link, a page missing from the navigation or a reference page the hook cannot generate."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site)],
        cwd=ROOT,  # the hook imports this checkout's `ecomrlve`
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    reference = (site / "configuration" / "index.html").read_text(encoding="utf-8")
    assert "training.rollout" in reference and "reserved_tasks" in reference
    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    assert "ecomrlve curriculum regenerate" in cli and "--min-steps" in cli
