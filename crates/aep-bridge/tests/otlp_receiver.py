#!/usr/bin/env python3
"""An OTLP/HTTP receiver for aep-bridge's end-to-end tests.

It decodes what it gets with the official `opentelemetry-proto` package from PyPI (an
implementation of the OTLP protos independent of the Rust exporter's prost types),
and prints one JSON line per request on stdout, each record in the flat JSON form of
the AEP-0005 conformance pins (`fixtures/conformance/otlp/otlp-expected.json`), so a
test can compare what arrived with the pins directly.

Usage: otlp_receiver.py [--token TOKEN]

Binds 127.0.0.1 on a free port and prints `listening on PORT` first. A request without
`Authorization: Bearer TOKEN` (when a token is given) is answered 401. Ends when stdin
closes, so it never outlives the test that started it.
"""
import argparse
import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def any_value(v):
    """An AnyValue as JSON."""
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind)


def attrs(kvs):
    return {kv.key: any_value(kv.value) for kv in kvs}


def log_record(resource, r):
    out = {
        "time_unix_nano": r.time_unix_nano,
        "event_name": r.event_name,
        "severity_text": r.severity_text,
        "severity_number": r.severity_number,
        "resource": resource,
        "attributes": attrs(r.attributes),
    }
    if r.trace_id:
        out["trace_id"] = r.trace_id.hex()
        out["span_id"] = r.span_id.hex()
        out["flags"] = r.flags
    if r.HasField("body"):
        out["body"] = any_value(r.body)
    return out


def span(resource, s):
    return {
        "resource": resource,
        "trace_id": s.trace_id.hex(),
        "span_id": s.span_id.hex(),
        "parent_span_id": s.parent_span_id.hex(),
        "name": s.name,
        "kind": s.kind,
        "start_time_unix_nano": s.start_time_unix_nano,
        "end_time_unix_nano": s.end_time_unix_nano,
        "attributes": attrs(s.attributes),
        "events": [e.name for e in s.events],
        "links": [{"span_id": l.span_id.hex(), "attributes": attrs(l.attributes)} for l in s.links],
        "status": {"code": s.status.code, "message": s.status.message},
    }


# Each signal by its path: its request and response messages, where its records sit
# (resource, scope, record), how one record reads as JSON, and the key it is printed under.
SIGNALS = {
    "/v1/logs": (
        ExportLogsServiceRequest,
        ExportLogsServiceResponse,
        ("resource_logs", "scope_logs", "log_records"),
        log_record,
        "logs",
    ),
    "/v1/traces": (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
        ("resource_spans", "scope_spans", "spans"),
        span,
        "spans",
    ),
}


class Handler(BaseHTTPRequestHandler):
    token = None
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", content_type="application/x-protobuf"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.token is not None and self.headers.get("Authorization") != f"Bearer {self.token}":
            return self.answer(401, b"unauthorized", "text/plain")
        encoding = self.headers.get("Content-Encoding", "")
        if encoding == "gzip":
            body = gzip.decompress(body)
        line = {
            "path": self.path,
            "content_type": self.headers.get("Content-Type"),
            "encoding": encoding,
        }
        signal = SIGNALS.get(self.path)
        if signal is None:
            return self.answer(404, b"no such signal", "text/plain")
        request, response, (resources, scopes, items), record, key = signal
        req = request.FromString(body)
        line[key] = [
            record(attrs(r.resource.attributes), item)
            for r in getattr(req, resources)
            for s in getattr(r, scopes)
            for item in getattr(s, items)
        ]
        reply = response().SerializeToString()
        with self.lock:
            print(json.dumps(line), flush=True)
        self.answer(200, reply)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--token")
    args = parser.parse_args()
    Handler.token = args.token
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"listening on {server.server_address[1]}", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()  # the test closes stdin (or dies): stop with it
    server.shutdown()


if __name__ == "__main__":
    main()
