"""The package is typed: mypy --strict finds nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def test_mypy_strict(tmp_path: object) -> None:
    mypy = shutil.which("mypy")
    if mypy is None:
        pytest.skip("mypy is not installed (Debian: apt-get install mypy)")
    out = subprocess.run(
        [mypy, "--strict", "--no-incremental", "--cache-dir", os.devnull, "schedq"],
        cwd=TOP, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
