//! File deletions: the admin's protection, then the user's modes.

use super::{Explain, Parts, kill_switch, modes, on_off};
use crate::policy::lists::{CompiledAdmin, CompiledUser};
use crate::policy::{Outcome, Reason};

pub(super) fn delete<E: Explain>(
    admin: &CompiledAdmin,
    user: &CompiledUser,
    path: &str,
    ex: &mut E,
) -> Parts {
    if let Some(parts) = kill_switch(admin, ex) {
        return parts;
    }
    if admin.disabled {
        ex.check("admin_disabled", || {
            "the admin allows nothing to auto-run".to_owned()
        });
        return (Outcome::Ask, Reason::AdminDisabled, None, Vec::new());
    }
    if path.trim().is_empty() {
        ex.check("path", || "empty".to_owned());
        return (Outcome::Ask, Reason::InvalidName, None, Vec::new());
    }
    let protected = admin.controlled() && admin.controls.delete_file_protection;
    ex.check("delete_file_protection", || on_off(protected).to_owned());
    if protected {
        return (Outcome::Ask, Reason::DeleteProtected, None, Vec::new());
    }
    let (auto_run, run_everything) = modes(admin, user, ex);
    if run_everything && (!admin.controlled() || admin.controls.enable_run_everything) {
        (Outcome::Allow, Reason::RunEverything, None, Vec::new())
    } else if auto_run {
        (Outcome::Allow, Reason::AutoRunOn, None, Vec::new())
    } else {
        (Outcome::Ask, Reason::AutoRunOff, None, Vec::new())
    }
}
