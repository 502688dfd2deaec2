"""`dra-capacity serve --help` documents what the README promises: flags, endpoints and status codes."""

from __future__ import annotations

import pytest

from dra_capacity.cli import main


def test_serve_help_lists_flags_endpoints_status_codes_and_exit_status(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0
    for flag in (
        "--listen",
        "--tls-dir",
        "--self-signed",
        "--dns-name",
        "--feature-gates",
        "--metrics-listen",
    ):
        assert flag in out
    for endpoint in ("POST /validate", "POST /mutate", "GET  /healthz", "GET  /readyz", "GET  /metrics"):
        assert endpoint in out
    for code in ("200", "400", "413", "415", "404/405"):
        assert f"\n  {code} " in out or f"  {code}  " in out
    assert "exit status: 0 after SIGTERM or SIGINT; 2 for bad flags or a startup failure" in out
