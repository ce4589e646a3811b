"""A third-party client: Python grpcio discovers toolgate by reflection and calls it.

Usage: reflection_client.py ADDR TOKEN. Uses only what the server reflects (no
generated stubs): lists the services, checks health, writes a user's settings and
evaluates a call. Prints one JSON line with what it saw; exits non-zero on failure.
"""

import json
import sys

import grpc
from google.protobuf import descriptor_pool, json_format, message_factory
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)


def unary(channel, pool, method_path, request_json, token=None):
    service_name, method_name = method_path.rsplit("/", 1)
    method = pool.FindServiceByName(service_name).FindMethodByName(method_name)
    request_cls = message_factory.GetMessageClass(method.input_type)
    response_cls = message_factory.GetMessageClass(method.output_type)
    call = channel.unary_unary(
        f"/{service_name}/{method_name}",
        request_serializer=request_cls.SerializeToString,
        response_deserializer=response_cls.FromString,
    )
    metadata = [("authorization", f"Bearer {token}")] if token else None
    response = call(json_format.Parse(json.dumps(request_json), request_cls()), metadata=metadata, timeout=10)
    return json_format.MessageToDict(response, preserving_proto_field_name=True)


def main():
    addr, token = sys.argv[1], sys.argv[2]
    with grpc.insecure_channel(addr) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        services = sorted(database.get_services())
        pool = descriptor_pool.DescriptorPool(database)
        health = unary(channel, pool, "grpc.health.v1.Health/Check", {"service": ""})
        unary(
            channel,
            pool,
            "toolgate.v1.UserSettingsService/UpdateUserSettings",
            {
                "settings": {
                    "team_id": "acme",
                    "user_id": "alice",
                    "use_yolo_mode": True,
                    "mcp_allowed_tools": ["github:*"],
                }
            },
            token,
        )
        decision = unary(
            channel,
            pool,
            "toolgate.v1.PolicyService/Evaluate",
            {"team_id": "acme", "user_id": "alice", "call": {"mcp": {"server": "github", "tool": "merge_pr"}}},
            token,
        )["decision"]
        try:
            unary(channel, pool, "toolgate.v1.PolicyService/Evaluate", {"team_id": "acme", "user_id": "alice"})
            unauthenticated = False
        except grpc.RpcError as e:
            unauthenticated = e.code() == grpc.StatusCode.UNAUTHENTICATED
    print(
        json.dumps(
            {
                "services": services,
                "health": health.get("status"),
                "outcome": decision.get("outcome"),
                "reason": decision.get("reason"),
                "matched_entry": decision.get("matched_entry"),
                "unauthenticated_without_token": unauthenticated,
            }
        )
    )


if __name__ == "__main__":
    main()
