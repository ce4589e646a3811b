//! The console's API types, `console/src/proto.ts`, are generated from the descriptor
//! set the proto crate builds: each message's canonical JSON shape, each enum's names,
//! each RPC's request and response, with the proto's comments. The file is committed
//! (building the console needs no protoc and no network); this test regenerates it and
//! fails when the committed one differs (`UPDATE_CONSOLE=1` rewrites it).

use prost::Message as _;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, FieldDescriptorProto, FileDescriptorProto,
    FileDescriptorSet,
};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const GENERATED: &str = "console/src/proto.ts";
const PACKAGE: &str = "toolgate.v1";

/// `FileDescriptorProto`'s field numbers, for the source locations of comments.
const MESSAGE_TYPE: i32 = 4;
const ENUM_TYPE: i32 = 5;
const SERVICE: i32 = 6;
const MESSAGE_FIELD: i32 = 2;
const MESSAGE_NESTED: i32 = 3;
const MESSAGE_ENUM: i32 = 4;
const SERVICE_METHOD: i32 = 2;

#[test]
fn the_consoles_api_types_are_generated_from_the_proto() {
    let want = typescript();
    let path = Path::new(ROOT).join(GENERATED);
    if std::env::var_os("UPDATE_CONSOLE").is_some() {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{GENERATED} differs from what proto/ generates: run `UPDATE_CONSOLE=1 cargo test --test it \
         console_proto::`, then `npm --prefix console run build`, and commit both"
    );
}

/// Every message, enum and RPC of the API package, as TypeScript.
fn typescript() -> String {
    let set = FileDescriptorSet::decode(toolgate::proto::FILE_DESCRIPTOR_SET)
        .expect("the proto crate's descriptor set decodes");
    let mut out = String::from(
        "// Generated from proto/toolgate/v1/ by tests/it/console_proto.rs: do not edit.\n\
         // Regenerate: UPDATE_CONSOLE=1 cargo test --test it console_proto::\n\
         //\n\
         // The API's messages as canonical protobuf JSON writes them: lowerCamelCase\n\
         // names, 64-bit integers as strings, enums by name, timestamps as RFC 3339\n\
         // text, fields at their default value left out (so every field is optional).\n\
         \n\
         /** A 64-bit integer: JSON writes it as a string and reads a number too. */\n\
         export type U64 = string | number;\n",
    );
    let mut methods = Vec::new();
    for file in set.file.iter().filter(|f| f.package() == PACKAGE) {
        let comments = Comments::of(file);
        write!(out, "\n// {}\n", file.name()).unwrap();
        for (i, e) in file.enum_type.iter().enumerate() {
            enumeration(&mut out, e, "", &comments, &[ENUM_TYPE, i as i32]);
        }
        for (i, m) in file.message_type.iter().enumerate() {
            message(&mut out, m, "", &comments, &[MESSAGE_TYPE, i as i32]);
        }
        for (i, service) in file.service.iter().enumerate() {
            for (j, method) in service.method.iter().enumerate() {
                assert!(
                    !method.client_streaming(),
                    "{}/{}: a browser cannot stream a request; the generator knows no such RPC",
                    service.name(),
                    method.name()
                );
                let path = [SERVICE, i as i32, SERVICE_METHOD, j as i32];
                methods.push((
                    format!("{}/{}", service.name(), method.name()),
                    comments.get(&path).map(str::to_owned),
                    type_name(method.input_type()),
                    type_name(method.output_type()),
                    method.server_streaming(),
                ));
            }
        }
    }
    out.push_str(
        "\n/** Every RPC by its path under `/toolgate.v1.`: its request, its response, and\n \
         * whether the response is a stream of them. */\nexport type Methods = {\n",
    );
    for (path, comment, request, response, stream) in methods {
        doc(&mut out, "  ", comment.as_deref());
        writeln!(
            out,
            "  \"{path}\": {{ request: {request}; response: {response}; stream: {stream} }};"
        )
        .unwrap();
    }
    out.push_str("};\n");
    out
}

/// A message as a type of its JSON object, then its nested enums and messages.
fn message(out: &mut String, m: &DescriptorProto, outer: &str, comments: &Comments, at: &[i32]) {
    if m.options.as_ref().is_some_and(|o| o.map_entry()) {
        return;
    }
    let name = format!("{outer}{}", m.name());
    out.push('\n');
    doc(out, "", comments.get(at));
    writeln!(out, "export type {name} = {{").unwrap();
    for (i, f) in m.field.iter().enumerate() {
        let path = [at, &[MESSAGE_FIELD, i as i32]].concat();
        doc(out, "  ", comments.get(&path));
        writeln!(out, "  {}?: {};", json_name(f), field_type(f, m)).unwrap();
    }
    out.push_str("};\n");
    for (i, e) in m.enum_type.iter().enumerate() {
        let path = [at, &[MESSAGE_ENUM, i as i32]].concat();
        enumeration(out, e, &format!("{name}_"), comments, &path);
    }
    for (i, nested) in m.nested_type.iter().enumerate() {
        let path = [at, &[MESSAGE_NESTED, i as i32]].concat();
        message(out, nested, &format!("{name}_"), comments, &path);
    }
}

/// An enum as the list of its names (a value the console can iterate) and their union.
fn enumeration(
    out: &mut String,
    e: &EnumDescriptorProto,
    outer: &str,
    comments: &Comments,
    at: &[i32],
) {
    let name = format!("{outer}{}", e.name());
    out.push('\n');
    doc(out, "", comments.get(at));
    writeln!(out, "export const {name} = [").unwrap();
    for value in &e.value {
        writeln!(out, "  \"{}\",", value.name()).unwrap();
    }
    writeln!(
        out,
        "] as const;\nexport type {name} = (typeof {name})[number];"
    )
    .unwrap();
}

/// The field's name in JSON: protoc's `json_name`, else protobuf's lowerCamelCase.
fn json_name(f: &FieldDescriptorProto) -> String {
    if let Some(name) = &f.json_name {
        return name.clone();
    }
    let mut out = String::new();
    let mut upper = false;
    for c in f.name().chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn field_type(f: &FieldDescriptorProto, owner: &DescriptorProto) -> String {
    let one =
        match f.r#type() {
            Type::Double | Type::Float => "number".to_owned(),
            Type::Int32 | Type::Uint32 | Type::Sint32 | Type::Fixed32 | Type::Sfixed32 => {
                "number".to_owned()
            }
            Type::Int64 | Type::Uint64 | Type::Sint64 | Type::Fixed64 | Type::Sfixed64 => {
                "U64".to_owned()
            }
            Type::Bool => "boolean".to_owned(),
            // bytes are base64 text in JSON
            Type::String | Type::Bytes => "string".to_owned(),
            Type::Enum => type_name(f.type_name()),
            Type::Message => {
                let short = f.type_name().rsplit('.').next().unwrap_or_default();
                if let Some(entry) = owner.nested_type.iter().find(|n| {
                    n.name() == short && n.options.as_ref().is_some_and(|o| o.map_entry())
                }) {
                    return format!(
                        "{{ [key: string]: {} }}",
                        field_type(&entry.field[1], entry)
                    );
                }
                type_name(f.type_name())
            }
            other => panic!("{}: the generator knows no {other:?} field", f.name()),
        };
    if f.label() == Label::Repeated {
        format!("{one}[]")
    } else {
        one
    }
}

/// The TypeScript name of a message or enum type (`.toolgate.v1.A.B` is `A_B`), or
/// the JSON form of a well-known type.
fn type_name(full: &str) -> String {
    if let Some(local) = full.strip_prefix(&format!(".{PACKAGE}.")) {
        return local.replace('.', "_");
    }
    match full {
        ".google.protobuf.Timestamp"
        | ".google.protobuf.Duration"
        | ".google.protobuf.FieldMask" => "string",
        ".google.protobuf.Struct" => "{ [key: string]: unknown }",
        ".google.protobuf.Value" => "unknown",
        ".google.protobuf.ListValue" => "unknown[]",
        other => panic!(
            "{other}: the generator knows no JSON form of it; add one to \
             tests/it/console_proto.rs"
        ),
    }
    .to_owned()
}

/// A comment as JSDoc, indented.
fn doc(out: &mut String, indent: &str, comment: Option<&str>) {
    let Some(comment) = comment else { return };
    let lines: Vec<String> = comment
        .trim_end()
        .lines()
        .map(|l| l.strip_prefix(' ').unwrap_or(l).replace("*/", "*\\/"))
        .collect();
    if let [line] = lines.as_slice() {
        writeln!(out, "{indent}/** {line} */").unwrap();
        return;
    }
    writeln!(out, "{indent}/**").unwrap();
    for line in lines {
        let line = format!("{indent} * {line}");
        writeln!(out, "{}", line.trim_end()).unwrap();
    }
    writeln!(out, "{indent} */").unwrap();
}

/// A file's leading comments by the path of what they precede.
struct Comments(BTreeMap<Vec<i32>, String>);

impl Comments {
    fn of(file: &FileDescriptorProto) -> Self {
        let locations = file.source_code_info.iter().flat_map(|s| &s.location);
        Self(
            locations
                .filter_map(|l| Some((l.path.clone(), l.leading_comments.clone()?)))
                .filter(|(_, c)| !c.trim().is_empty())
                .collect(),
        )
    }

    fn get(&self, path: &[i32]) -> Option<&str> {
        self.0.get(path).map(String::as_str)
    }
}
