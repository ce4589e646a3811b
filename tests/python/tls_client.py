"""A third-party TLS client: Python grpcio calls toolgate over TLS, with or without a
client certificate, and prints the gRPC status code name of each call (OK, or the
code the call failed with; a failed handshake shows as UNAVAILABLE).

Usage: tls_client.py ADDR CA|- CERT|- KEY|- TOKEN|- METHOD REQUEST_HEX [...]
Each METHOD REQUEST_HEX pair is one unary call with the given serialized request;
a CA of "-" connects in plaintext.
"""

import sys

import grpc


def main():
    addr, ca, cert, key, token = sys.argv[1:6]
    calls = sys.argv[6:]
    if ca == "-":
        channel = grpc.insecure_channel(addr)
    else:
        read = lambda p: open(p, "rb").read() if p != "-" else None
        creds = grpc.ssl_channel_credentials(
            root_certificates=read(ca), private_key=read(key), certificate_chain=read(cert)
        )
        # the test's certificates name localhost; the address is 127.0.0.1
        channel = grpc.secure_channel(
            addr, creds, options=[("grpc.ssl_target_name_override", "localhost")]
        )
    metadata = [("authorization", f"Bearer {token}")] if token != "-" else None
    for method, request in zip(calls[0::2], calls[1::2]):
        call = channel.unary_unary(method)
        try:
            call(bytes.fromhex(request), metadata=metadata, timeout=10)
            print("OK")
        except grpc.RpcError as e:
            print(e.code().name)


main()
