//! Protobuf's canonical JSON ⇄ the wire bytes, through the descriptor set (no
//! generated code): what lets every RPC, present and future, take a JSON body.

use crate::service::ServiceError;
use prost::Message as _;
use prost_reflect::{DynamicMessage, Kind, MessageDescriptor, SerializeOptions};
use serde_json::Value;
use tonic::Status;

/// How deeply a request's JSON may nest. The deepest message of the API nests a few
/// levels; a body of a million `[` must not cost a parser stack.
pub const MAX_DEPTH: usize = 32;

/// The request message `desc` read from its JSON form, encoded. An empty body is the
/// empty message (`curl -d ''`).
pub fn to_protobuf(desc: &MessageDescriptor, body: &[u8]) -> Result<Vec<u8>, Status> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    if nesting_exceeds(body, MAX_DEPTH) {
        return Err(invalid(
            "body",
            format!("JSON nests deeper than {MAX_DEPTH} levels: no message of this API does"),
        ));
    }
    let mut reader = serde_json::Deserializer::from_slice(body);
    let read = DynamicMessage::deserialize(desc.clone(), &mut reader)
        .and_then(|message| reader.end().map(|()| message));
    match read {
        Ok(message) => Ok(message.encode_to_vec()),
        Err(e) => Err(match locate(desc, body) {
            Some((field, why)) => invalid(&field, why),
            None => invalid(
                "body",
                format!(
                    "{e}: send the {} message as JSON, fields in lowerCamelCase or as the proto names",
                    desc.full_name()
                ),
            ),
        }),
    }
}

/// The response message `desc` in its canonical JSON form.
pub fn to_json(desc: &MessageDescriptor, bytes: &[u8]) -> Result<Vec<u8>, Status> {
    let message = DynamicMessage::decode(desc.clone(), bytes).map_err(|e| {
        ServiceError::Internal(format!("{} does not decode: {e}", desc.full_name()))
    })?;
    let mut out = Vec::with_capacity(bytes.len() * 2);
    let mut writer = serde_json::Serializer::with_formatter(&mut out, WholeNumbers);
    message
        .serialize_with_options(&mut writer, &SerializeOptions::new())
        .map_err(|e| ServiceError::Internal(format!("{} as JSON: {e}", desc.full_name())))?;
    Ok(out)
}

/// Compact JSON that writes a whole double within ±2⁵³ as an integer (`5`, not
/// `5.0`): a `google.protobuf.Value` holds every number as a double, so a count in
/// a `Struct` (GetServerConfig's configuration) would otherwise read as a fraction.
/// Both spellings are the same JSON number, so a reader loses nothing.
struct WholeNumbers;

impl serde_json::ser::Formatter for WholeNumbers {
    fn write_f64<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        value: f64,
    ) -> std::io::Result<()> {
        const EXACT: f64 = 9_007_199_254_740_992.0; // 2⁵³
        if value.fract() == 0.0 && value.abs() <= EXACT {
            #[allow(clippy::cast_possible_truncation)] // whole and within ±2⁵³: exact
            return self.write_i64(writer, value as i64);
        }
        serde_json::ser::CompactFormatter.write_f64(writer, value)
    }
}

fn invalid(field: &str, message: String) -> Status {
    ServiceError::InvalidArgument {
        field: field.to_owned(),
        message,
    }
    .into()
}

/// Whether `json` nests arrays and objects deeper than `max`, read without parsing
/// (brackets inside strings do not count).
fn nesting_exceeds(json: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in json {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// The field that made a body unreadable, as a path (`autoRunControls.enabled`,
/// `calls[2].mcp`), and why: read again field by field, only once reading failed.
fn locate(desc: &MessageDescriptor, body: &[u8]) -> Option<(String, String)> {
    let value: Value = serde_json::from_slice(body).ok()?;
    locate_in(desc, &value, "")
}

fn locate_in(desc: &MessageDescriptor, value: &Value, prefix: &str) -> Option<(String, String)> {
    let Value::Object(fields) = value else {
        return Some((
            if prefix.is_empty() { "body" } else { prefix }
                .trim_end_matches('.')
                .to_owned(),
            format!("must be a JSON object (the {} message)", desc.full_name()),
        ));
    };
    for (key, v) in fields {
        let path = format!("{prefix}{key}");
        let Some(field) = desc
            .get_field_by_json_name(key)
            .or_else(|| desc.get_field_by_name(key))
        else {
            let known: Vec<_> = desc.fields().map(|f| f.json_name().to_owned()).collect();
            return Some((
                path,
                format!(
                    "no such field in {}: the fields are {}",
                    desc.full_name(),
                    known.join(", ")
                ),
            ));
        };
        let alone = Value::Object([(key.clone(), v.clone())].into_iter().collect());
        let Err(e) = DynamicMessage::deserialize(desc.clone(), alone) else {
            continue;
        };
        // a message inside names its own field
        if let Kind::Message(inner) = field.kind() {
            if field.is_list()
                && let Value::Array(items) = v
            {
                for (i, item) in items.iter().enumerate() {
                    if let Some(found) = locate_in(&inner, item, &format!("{path}[{i}].")) {
                        return Some(found);
                    }
                }
            } else if !field.is_map()
                && v.is_object()
                && let Some(found) = locate_in(&inner, v, &format!("{path}."))
            {
                return Some(found);
            }
        }
        return Some((path, e.to_string()));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost_reflect::DescriptorPool;

    fn message(name: &str) -> MessageDescriptor {
        DescriptorPool::decode(crate::proto::FILE_DESCRIPTOR_SET)
            .unwrap()
            .get_message_by_name(name)
            .unwrap()
    }

    #[test]
    fn nesting_is_counted_outside_strings_only() {
        assert!(!nesting_exceeds(br#"{"a":[1,{"b":"[[[[[["}]}"#, 3));
        assert!(nesting_exceeds(b"[[[[", 3));
        assert!(!nesting_exceeds(br#"{"a":"\"[[[["}"#, 1));
    }

    #[test]
    fn bad_bodies_name_the_field() {
        let evaluate = message("toolgate.v1.EvaluateRequest");
        for (body, field, says) in [
            (r#"{"teamId":"acme","bogus":1}"#, "bogus", "no such field"),
            (r#"{"teamId":7}"#, "teamId", "invalid type"),
            (
                r#"{"call":{"mcp":{"server":1}}}"#,
                "call.mcp.server",
                "invalid type",
            ),
            (r#"{"call":[]}"#, "call", "invalid type"),
            (r#"[]"#, "body", "JSON object"),
        ] {
            let e = to_protobuf(&evaluate, body.as_bytes()).unwrap_err();
            assert_eq!(e.code(), tonic::Code::InvalidArgument, "{body}");
            assert!(
                e.message().starts_with(&format!("{field}: ")) && e.message().contains(says),
                "{body}: {}",
                e.message()
            );
        }
        let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
        let e = to_protobuf(&evaluate, deep.as_bytes()).unwrap_err();
        assert!(e.message().contains("nests deeper"), "{}", e.message());
    }

    #[test]
    fn whole_doubles_are_written_as_integers() {
        let desc = message("google.protobuf.Value");
        for (number, json) in [
            (5.0, "5"),
            (-3.0, "-3"),
            (0.0, "0"),
            (0.25, "0.25"),
            (9_007_199_254_740_992.0, "9007199254740992"),
            (1e300, "1e+300"),
        ] {
            let value = prost_types::Value {
                kind: Some(prost_types::value::Kind::NumberValue(number)),
            };
            let out = to_json(&desc, &value.encode_to_vec()).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), json, "{number}");
        }
    }

    #[test]
    fn json_goes_both_ways() {
        let evaluate = message("toolgate.v1.EvaluateRequest");
        let bytes = to_protobuf(
            &evaluate,
            br#"{"team_id":"acme","userId":"alice","explain":true}"#,
        )
        .unwrap();
        let json: Value = serde_json::from_slice(&to_json(&evaluate, &bytes).unwrap()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"teamId": "acme", "userId": "alice", "explain": true})
        );
        assert!(to_protobuf(&evaluate, b"  ").unwrap().is_empty());
    }
}
