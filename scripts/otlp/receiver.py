#!/usr/bin/env python3
"""A small OTLP/HTTP trace receiver for scripts/check-tracing.

    receiver.py PORT OUT.jsonl [CERT KEY]
                                        decodes every POST /v1/traces (protobuf
                                        ExportTraceServiceRequest, the published
                                        opentelemetry-proto package), appends one JSON line
                                        per span to OUT.jsonl, answers 200 with an empty
                                        ExportTraceServiceResponse; with CERT and KEY (PEM
                                        files), over TLS

Listens on 127.0.0.1 only.
"""

import http.server
import json
import sys
import threading


def attribute_value(value):
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [attribute_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


def span_line(resource, span):
    return {
        "service": {a.key: attribute_value(a.value) for a in resource.attributes}.get("service.name"),
        "traceId": span.trace_id.hex(),
        "spanId": span.span_id.hex(),
        "parentSpanId": span.parent_span_id.hex(),
        "name": span.name,
        "kind": span.kind,
        "start": span.start_time_unix_nano,
        "end": span.end_time_unix_nano,
        "status": span.status.code,
        "attributes": {a.key: attribute_value(a.value) for a in span.attributes},
        "links": [{"traceId": l.trace_id.hex(), "spanId": l.span_id.hex()} for l in span.links],
        "events": [
            {"name": e.name, "time": e.time_unix_nano, "attributes": {a.key: attribute_value(a.value) for a in e.attributes}}
            for e in span.events
        ],
    }


def serve(port, out, tls=None):
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                self.send_error(404 if self.path != "/v1/traces" else 415)
                return
            request = trace_service_pb2.ExportTraceServiceRequest()
            request.ParseFromString(body)
            lines = [
                json.dumps(span_line(rs.resource, span))
                for rs in request.resource_spans
                for ss in rs.scope_spans
                for span in ss.spans
            ]
            with lock, open(out, "a") as f:
                f.writelines(line + "\n" for line in lines)
            answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    if tls:
        import ssl

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()


if __name__ == "__main__":
    port = int(sys.argv[1])
    serve(port, sys.argv[2], tuple(sys.argv[3:5]) if len(sys.argv) >= 5 else None)
