"""An OTLP logs receiver for the tests, built on the opentelemetry-proto package.

Serves LogsService/Export over gRPC and POST /v1/logs (HTTP/protobuf) at once; the
first line on stdout names the ports ({"grpc": N, "http": M}), then every log record
received is one JSON line: its protocol, event name, severity, body, attributes and
resource attributes. Stopped by the test (killed) and started again on the same ports
(--grpc-port, --http-port) to play a collector outage.
"""

import argparse
import json
import sys
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc

# what one request may be: a collector's default receive limit
MAX_BODY = 4 * 1024 * 1024
lock = threading.Lock()


def value_of(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind in ("string_value", "int_value", "bool_value", "double_value") else str(v)


def emit(protocol, request):
    with lock:
        for rl in request.resource_logs:
            resource = {kv.key: value_of(kv.value) for kv in rl.resource.attributes}
            for sl in rl.scope_logs:
                for r in sl.log_records:
                    print(json.dumps({
                        "protocol": protocol,
                        "event_name": r.event_name,
                        "severity_text": r.severity_text,
                        "severity_number": r.severity_number,
                        "body": value_of(r.body),
                        "attributes": {kv.key: value_of(kv.value) for kv in r.attributes},
                        "resource": resource,
                    }), flush=True)


class Logs(logs_service_pb2_grpc.LogsServiceServicer):
    def Export(self, request, context):
        emit("grpc", request)
        return logs_service_pb2.ExportLogsServiceResponse()


class Http(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        if self.path != "/v1/logs" or length > MAX_BODY:
            self.send_response(404 if self.path != "/v1/logs" else 413)
            self.end_headers()
            return
        if self.headers.get("content-type") != "application/x-protobuf":
            self.send_response(415)
            self.end_headers()
            return
        request = logs_service_pb2.ExportLogsServiceRequest()
        request.ParseFromString(self.rfile.read(length))
        emit("http", request)
        body = logs_service_pb2.ExportLogsServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--grpc-port", type=int, default=0)
    parser.add_argument("--http-port", type=int, default=0)
    args = parser.parse_args()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                         options=[("grpc.max_receive_message_length", MAX_BODY), ("grpc.so_reuseport", 0)])
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(Logs(), server)
    grpc_port = server.add_insecure_port(f"127.0.0.1:{args.grpc_port}")
    if grpc_port == 0:
        sys.exit(f"cannot listen on gRPC port {args.grpc_port}")
    ThreadingHTTPServer.allow_reuse_address = True
    http = ThreadingHTTPServer(("127.0.0.1", args.http_port), Http)
    server.start()
    threading.Thread(target=http.serve_forever, daemon=True).start()
    print(json.dumps({"grpc": grpc_port, "http": http.server_address[1]}), flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
