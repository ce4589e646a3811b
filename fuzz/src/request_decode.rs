//! `Evaluate` and `FilterTools` as the server takes them, without a server: the
//! protobuf bytes decoded by prost (as the gRPC codec does), converted, the ids
//! checked by the service's one id check, then decided (or filtered) against a
//! policy with every kind of list. Never panics.

use prost::Message;
use std::sync::LazyLock;
use toolgate::grpc::convert::{call_from_pb, decision_to_pb};
use toolgate::ids::check_id;
use toolgate::policy::{
    AdminControls, CompiledAdmin, CompiledUser, ToolActionList, ToolActionLists, UserSettings,
    decide_in, explain_in, filter_tools_in,
};
use toolgate::proto::v1 as pb;

struct Policy {
    lists: ToolActionLists,
    admin: CompiledAdmin,
    user: CompiledUser,
}

static POLICY: LazyLock<Policy> = LazyLock::new(|| {
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    let admin = AdminControls {
        enabled: true,
        allowed: s(&["git status", "cargo test"]),
        blocked: s(&["rm", "git push"]),
        mcp_tool_allowlist: s(&["jira:*", "github:get_*", "builtin:Read"]),
        mcp_tool_blocklist: s(&["github:delete_*"]),
        ..AdminControls::default()
    };
    let user = UserSettings {
        mcp_allowed_tools: s(&["linear:*", "@readonly"]),
        command_allowlist: s(&["ls", "npm run *"]),
        command_denylist: s(&["curl"]),
        ..UserSettings::default()
    };
    let gasoline = ToolActionList::compile(
        "mcp_servers[0].allowed_tools",
        "gasoline",
        &s(&["observe.*", "interact.navigate"]),
    )
    .expect("valid list");
    Policy {
        lists: ToolActionLists::new(vec![gasoline]).expect("valid lists"),
        admin: CompiledAdmin::compile(&admin).expect("valid admin controls"),
        user: CompiledUser::compile(&user).expect("valid user settings"),
    }
});

/// One input, as libFuzzer hands it over.
pub fn run(data: &[u8]) {
    let Some((&which, bytes)) = data.split_first() else {
        return;
    };
    let p = &*POLICY;
    if which & 1 == 0 {
        let Ok(r) = pb::EvaluateRequest::decode(bytes) else {
            return;
        };
        if check_id("team_id", &r.team_id).is_err() || check_id("user_id", &r.user_id).is_err() {
            return;
        }
        let Ok(call) = call_from_pb(&"call", r.call) else {
            return;
        };
        let decide = if r.explain { explain_in } else { decide_in };
        let d = decide(&p.lists, &p.admin, &p.user, &call);
        let _ = d.message(&call);
        decision_to_pb(d, &call, 1).encode_to_vec();
    } else {
        let Ok(r) = pb::FilterToolsRequest::decode(bytes) else {
            return;
        };
        if check_id("team_id", &r.team_id).is_err() || check_id("user_id", &r.user_id).is_err() {
            return;
        }
        let Some(Ok(value)) = r
            .tools
            .as_ref()
            .map(|v| toolgate::proto::json::value_from_pb(v, "tools"))
        else {
            return;
        };
        let _ = filter_tools_in(&p.lists, &p.admin, &p.user, &r.server, &value);
    }
}
