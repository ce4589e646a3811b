//! C compilers' options: the outputs they write, and what they load or run.

use crate::policy::shell::effects::found::Found;

/// C compilers (gcc, cc, clang): `-o`/`--output`/`-MF` write; plugins, wrappers,
/// other program directories, spec files and response files run or load what the
/// line does not show.
pub(in crate::policy::shell) fn cc(name: &str, args: &[String], out: &mut Found) {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let next = args.get(i + 1).map(String::as_str);
        let opaque = a.starts_with('@')
            || a.starts_with("-B")
            || a.starts_with("-fplugin")
            || a.starts_with("-wrapper")
            || a.starts_with("-specs")
            || a.starts_with("--specs")
            || a.starts_with("-fuse-ld")
            || a.starts_with("--ld-path")
            || a.starts_with("-Xclang")
            || a.starts_with("-fpass-plugin")
            || a.starts_with("-load")
            || a.starts_with("-no-canonical-prefixes")
            || a.starts_with("--sysroot")
            || a.starts_with("-iplugindir")
            || a.contains("plugin");
        if opaque {
            out.opaque(format!(
                "{name} {a}: loads or runs a program the line does not show"
            ));
            return;
        }
        match a {
            "-o" | "--output" | "-MF" | "-MT" | "-MQ" | "-Xlinker" | "-x" | "-include" | "-I"
            | "-L" | "-l" | "-D" | "-U" | "-isystem" | "-imacros" | "-idirafter" | "-iprefix" => {
                if matches!(a, "-o" | "--output" | "-MF") {
                    match next {
                        Some(path) => out.writes.push(path.to_owned()),
                        None => out.opaque(format!("{name} {a} without its value")),
                    }
                }
                if a == "-Xlinker" && next.is_some_and(|n| n.contains("plugin")) {
                    out.opaque(format!("{name} -Xlinker: loads a linker plugin"));
                    return;
                }
                i += 2;
                continue;
            }
            _ => {}
        }
        if let Some(path) = a
            .strip_prefix("--output=")
            .or_else(|| a.strip_prefix("-MF"))
        {
            out.writes.push(path.to_owned());
        } else if let Some(path) = a.strip_prefix("-o").filter(|p| !p.is_empty()) {
            out.writes.push(path.to_owned());
        }
        i += 1;
    }
}
