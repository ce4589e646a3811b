//! Warnings about a valid policy that may not mean what its admin thinks: an allowed
//! command prefix that names a code runner allows whatever code it runs, and one
//! that names a program the reader has no knowledge of allows its unknown effects.

use super::AdminControls;
use super::shell::{runs_unseen_code, unknown_prefix_program};

/// One warning, at the field it is about (under `auto_run_controls.`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// e.g. `allowed[2]`.
    pub field: String,
    pub message: String,
}

/// Every warning about `controls`, in field order.
pub fn warnings(controls: &AdminControls) -> Vec<Warning> {
    let mut out = Vec::new();
    let defaults = controls
        .default_user_settings
        .as_deref()
        .map(|u| &u.command_allowlist);
    let lists = [
        ("allowed", Some(&controls.allowed)),
        ("default_user_settings.command_allowlist", defaults),
    ];
    for (field, list) in lists {
        for (i, prefix) in list.into_iter().flatten().enumerate() {
            if runs_unseen_code(prefix) {
                out.push(Warning {
                    field: format!("{field}[{i}]"),
                    message: format!(
                        "{prefix:?} runs code the command line does not show (a script, a Makefile, a package's scripts): allowing it lets that code do anything, unreviewed; allow narrower commands, or keep it only if you trust every script it can run"
                    ),
                });
            } else if let Some(program) = unknown_prefix_program(prefix) {
                out.push(Warning {
                    field: format!("{field}[{i}]"),
                    message: format!(
                        "{prefix:?} names {program:?}, a program toolgate has no knowledge of: its effects are unknown, so what it runs, writes or deletes is not checked (every decision it allows says so); allow it only if you trust every use of it, or ask for it to be added to the program table"
                    ),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_runner_prefixes_are_warned_about_and_others_are_not() {
        let controls = AdminControls {
            allowed: [
                "python3",
                "node",
                "bash",
                "npx",
                "npm run",
                "npm test",
                "cargo run",
                "make",
                "/usr/bin/python3 -m pytest",
                "git status",
                "ls",
                "@readonly",
                "cat",
            ]
            .map(String::from)
            .to_vec(),
            ..AdminControls::default()
        };
        let fields: Vec<String> = warnings(&controls).into_iter().map(|w| w.field).collect();
        assert_eq!(
            fields,
            (0..9).map(|i| format!("allowed[{i}]")).collect::<Vec<_>>()
        );
    }

    #[test]
    fn programs_with_no_row_are_warned_about() {
        let controls = AdminControls {
            allowed: [
                "terraform plan",
                "ls",
                "frobnicate --all",
                "LANG=C frobnicate",
                "git status",
                "@readonly",
            ]
            .map(String::from)
            .to_vec(),
            ..AdminControls::default()
        };
        let warned: Vec<(String, bool)> = warnings(&controls)
            .into_iter()
            .map(|w| (w.field, w.message.contains("effects are unknown")))
            .collect();
        assert_eq!(
            warned,
            [0, 2, 3].map(|i| (format!("allowed[{i}]"), true)).to_vec()
        );
    }
}
