"""A tiny validating webhook for the harness's own tests: denies any object labelled `realcluster/deny`,
allows the rest, and appends one line per AdmissionReview it answers to `--record`. Standard library only,
so it runs inside the network namespace with any Python.

    python tests/realcluster/deny_webhook.py --listen 10.250.16.2:8443 --cert tls.crt --key tls.key --record F
"""

from __future__ import annotations

import argparse
import json
import ssl
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--record", type=Path, required=True)
    args = parser.parse_args()
    host, port = args.listen.rsplit(":", 1)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            request = review["request"]
            obj = request.get("object") or {}
            labels = (obj.get("metadata") or {}).get("labels") or {}
            allowed = "realcluster/deny" not in labels
            with args.record.open("a") as record:
                record.write(
                    json.dumps({"path": self.path, "uid": request["uid"], "kind": request["kind"]}) + "\n"
                )
            response: dict[str, object] = {"uid": request["uid"], "allowed": allowed}
            if not allowed:
                response["status"] = {"code": 403, "message": "denied by the realcluster test webhook"}
            body = json.dumps(
                {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
            )
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((host, int(port)), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print(f"listening on {args.listen}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
