"""`dra-capacity serve` end to end, as a subprocess: self-signed start, a verified HTTPS review, clean exit on
SIGTERM; and startup failures that end with one line on stderr and exit 2, never a traceback.
"""

from __future__ import annotations

import json
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.ports import free_port
from support.serve_process import https

from certs.authority import generate_self_signed, issue_serving_certificate
from certs.files import write_bundle, write_pair
from dra_capacity.serve_cmd import host_port

CLI = str(Path(sys.executable).parent / "dra-capacity")
FIXTURE = Path(__file__).resolve().parents[2] / "bench" / "fixtures" / "deviceclass-realistic.json"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, "serve", *args], capture_output=True, text=True, timeout=60)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str, Path]]:
    port = free_port()
    tls_dir = tmp_path / "tls"
    proc = subprocess.Popen(
        [CLI, "serve", "--self-signed", "--listen", f"127.0.0.1:{port}", "--tls-dir", str(tls_dir)],
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"https://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        try:
            if https(url + "/readyz", tls_dir)[0] == 200:
                break
        except (OSError, ssl.SSLError):
            pass
        assert time.monotonic() < deadline, "serve never became ready"
        time.sleep(0.1)
    try:
        yield proc, url, tls_dir
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_answers_a_review_over_verified_https_and_exits_0_on_sigterm(
    served: tuple[subprocess.Popen[str], str, Path],
) -> None:
    proc, url, tls_dir = served
    status, body = https(url + "/validate", tls_dir, FIXTURE.read_bytes())
    assert status == 200
    response = json.loads(body)["response"]
    assert response["uid"] == "705ab4f5-6393-11e8-b7cc-42010a800002"
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0
    lines = [json.loads(line) for line in stderr.splitlines()]
    messages = [line["msg"] for line in lines]
    assert "serving" in messages and "admission decision" in messages and messages[-1] == "shutting down"


def test_self_signed_writes_the_ca_for_clients(served: tuple[subprocess.Popen[str], str, Path]) -> None:
    _, _, tls_dir = served
    assert sorted(p.name for p in tls_dir.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]


def test_missing_certificates_without_self_signed_exit_2_with_one_line(tmp_path: Path) -> None:
    result = run_cli("--listen", f"127.0.0.1:{free_port()}", "--tls-dir", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr == (
        f"dra-capacity serve: error: {tmp_path / 'tls.crt'}: serving certificate not found "
        "(mount the serving certificate there, or pass --self-signed)\n"
    )


def test_mismatched_pair_exits_2_even_with_self_signed(tmp_path: Path) -> None:
    bundle = generate_self_signed()
    write_bundle(tmp_path, bundle)
    write_pair(tmp_path, bundle.serving.cert_pem, issue_serving_certificate(bundle.ca).key_pem)
    result = run_cli("--self-signed", "--listen", f"127.0.0.1:{free_port()}", "--tls-dir", str(tmp_path))
    assert result.returncode == 2
    assert "does not match the certificate in" in result.stderr
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr


def test_port_in_use_exits_2_naming_the_address(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli("--self-signed", "--listen", f"127.0.0.1:{port}", "--tls-dir", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        f"dra-capacity serve: error: cannot listen on 127.0.0.1:{port}: Address already in use"
    )
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--listen", "8443"], "--listen: '8443': expected HOST:PORT"),
        (["--listen", "localhost:http"], "port 'http' is not a number"),
        (["--listen", "localhost:70000"], "port 70000 is out of range"),
        (["--metrics-listen", "nope"], "--metrics-listen: 'nope': expected HOST:PORT"),
        (["--feature-gates", "NoSuchGate=true"], "--feature-gates: unrecognized feature gate: NoSuchGate"),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(tmp_path: Path, flags: list[str], fragment: str) -> None:
    result = run_cli("--tls-dir", str(tmp_path), *flags)
    assert result.returncode == 2
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("host", "port", "expected"),
    [
        ("0.0.0.0", 8443, "0.0.0.0:8443"),
        ("::", 8443, "[::]:8443"),
        ("::1", 9090, "[::1]:9090"),
        ("localhost", 1, "localhost:1"),
    ],
)
def test_addresses_in_messages_bracket_ipv6_as_urls_do(host: str, port: int, expected: str) -> None:
    assert host_port(host, port) == expected
