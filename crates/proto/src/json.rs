//! `google.protobuf.Struct`/`Value` ⇄ `serde_json`: the API's free-form JSON
//! (a tool's arguments, a `tools/list` result, audit details, the server config)
//! travels as typed protobuf values, and the core reads it as JSON.

use crate::error::ConvertError;
use prost_types::{ListValue, Struct, Value, value::Kind};
use serde_json::{Map, Number};

/// Integers up to 2⁵³ survive a protobuf number (an f64) exactly.
const EXACT_INTEGER: f64 = 9_007_199_254_740_992.0;

/// A JSON value as a protobuf `Value`. Integers beyond 2⁵³ lose precision, as
/// they do in every JSON reader that uses doubles.
pub fn value_to_pb(v: &serde_json::Value) -> Value {
    let kind = match v {
        serde_json::Value::Null => Kind::NullValue(0),
        serde_json::Value::Bool(b) => Kind::BoolValue(*b),
        serde_json::Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::String(s) => Kind::StringValue(s.clone()),
        serde_json::Value::Array(items) => Kind::ListValue(ListValue {
            values: items.iter().map(value_to_pb).collect(),
        }),
        serde_json::Value::Object(map) => Kind::StructValue(object_to_pb(map)),
    };
    Value { kind: Some(kind) }
}

/// A JSON object as a protobuf `Struct`.
pub fn object_to_pb(map: &Map<String, serde_json::Value>) -> Struct {
    Struct {
        fields: map
            .iter()
            .map(|(k, v)| (k.clone(), value_to_pb(v)))
            .collect(),
    }
}

/// A protobuf `Value` as JSON: whole numbers within 2⁵³ become integers (so a
/// schema's `"maxLength": 5` stays `5`); a value with no kind, or a number that
/// is not finite, is refused, naming `field`.
pub fn value_from_pb(v: &Value, field: &str) -> Result<serde_json::Value, ConvertError> {
    Ok(match &v.kind {
        None => {
            return Err(ConvertError {
                field: field.to_owned(),
                message:
                    "is a Value with no kind: set one of null, bool, number, string, list or struct"
                        .to_owned(),
            });
        }
        Some(Kind::NullValue(_)) => serde_json::Value::Null,
        Some(Kind::BoolValue(b)) => serde_json::Value::Bool(*b),
        Some(Kind::NumberValue(n)) => number(*n, field)?,
        Some(Kind::StringValue(s)) => serde_json::Value::String(s.clone()),
        Some(Kind::ListValue(list)) => serde_json::Value::Array(
            list.values
                .iter()
                .enumerate()
                .map(|(i, v)| value_from_pb(v, &format!("{field}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        Some(Kind::StructValue(s)) => serde_json::Value::Object(object_from_pb(s, field)?),
    })
}

/// A protobuf `Struct` as a JSON object.
pub fn object_from_pb(
    s: &Struct,
    field: &str,
) -> Result<Map<String, serde_json::Value>, ConvertError> {
    // sorted, so the same struct always reads (and hashes) the same
    let mut keys: Vec<&String> = s.fields.keys().collect();
    keys.sort();
    keys.into_iter()
        .map(|k| {
            Ok((
                k.clone(),
                value_from_pb(&s.fields[k], &format!("{field}.{k}"))?,
            ))
        })
        .collect()
}

fn number(n: f64, field: &str) -> Result<serde_json::Value, ConvertError> {
    if n.fract() == 0.0 && n.abs() <= EXACT_INTEGER {
        #[allow(clippy::cast_possible_truncation)] // whole and within ±2⁵³: exact
        return Ok(serde_json::Value::Number(Number::from(n as i64)));
    }
    Number::from_f64(n)
        .map(serde_json::Value::Number)
        .ok_or_else(|| ConvertError {
            field: field.to_owned(),
            message: format!("{n} is not a JSON number: send a finite number"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_round_trips_through_a_protobuf_value() {
        let cases = [
            json!(null),
            json!(true),
            json!(5),
            json!(-7),
            json!(1.5),
            json!("x"),
            json!([1, "a", null, {"b": [2.25]}]),
            json!({"tools": [{"name": "t", "inputSchema": {"maxLength": 5}}]}),
        ];
        for case in cases {
            assert_eq!(value_from_pb(&value_to_pb(&case), "v").unwrap(), case);
        }
    }

    #[test]
    fn hostile_values_are_refused_naming_the_field() {
        let nan = Value {
            kind: Some(Kind::NumberValue(f64::NAN)),
        };
        let list = Value {
            kind: Some(Kind::ListValue(ListValue {
                values: vec![Value { kind: None }],
            })),
        };
        assert_eq!(value_from_pb(&nan, "a.b").unwrap_err().field, "a.b");
        assert_eq!(value_from_pb(&list, "t").unwrap_err().field, "t[0]");
        let inf = Value {
            kind: Some(Kind::NumberValue(f64::INFINITY)),
        };
        assert!(value_from_pb(&inf, "n").is_err());
    }
}
