"""Fixtures shared by the server tests of this directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.server_harness import make_tls_dir


@pytest.fixture
def tls_dir(tmp_path: Path) -> Path:
    """A TLS directory (`ca.crt`, `tls.crt`, `tls.key`) for a server on 127.0.0.1."""
    make_tls_dir(tmp_path / "tls")
    return tmp_path / "tls"
