//! The checkers of programs whose arguments are a language of their own (sed
//! scripts, awk programs, tar's modes, `git config`, split's names, gdb's commands,
//! C compilers' options, find's expression): what they run and write, into a command's effects.

mod awk;
mod cc;
mod find;
mod git_config;
mod sed;
mod split_gdb;
mod ssh;
mod tar;

pub(super) use awk::awk_read;
pub(super) use cc::cc;
pub(super) use find::find_read;
pub(super) use git_config::{git_config, git_config_read};
pub(super) use sed::sed_read;
#[cfg(test)]
pub(super) use sed::sed_script;
pub(super) use split_gdb::{gdb_read, split_read};
pub(super) use ssh::ssh_read;
pub(super) use tar::{tar_old_style, tar_read};
