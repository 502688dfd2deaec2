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


def test_serve_help_documents_native_rules(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--native-rules {warn,deny}" in out
    assert "'warn' (default)" in out and "always deny" in out


def test_serve_refuses_an_unknown_native_rules_mode(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--native-rules", "ignore"])
    assert exc.value.code == 2
    assert "--native-rules: invalid choice: 'ignore'" in capsys.readouterr().err


def test_the_served_handler_warns_on_native_findings_by_default() -> None:
    from dra_capacity.serve_cmd import load_handler
    from resourceapi.gates import FeatureGates
    from webhook.deviceclass.admission import DeviceClassAdmission
    from webhook.deviceclass.native_rules import NativeRules

    handler = load_handler(FeatureGates.defaults())
    assert isinstance(handler, DeviceClassAdmission)
    assert handler.native_rules is NativeRules.WARN
    denying = load_handler(FeatureGates.defaults(), native_rules="deny")
    assert isinstance(denying, DeviceClassAdmission) and denying.native_rules is NativeRules.DENY
