//! Which build is running: the version and the commit the binary was built from. Only
//! the binary knows its commit (its build script reads git), so it says so once at
//! start, before the server is built; a server embedded elsewhere (the tests) reports
//! this crate's version and an unknown commit.

use std::sync::OnceLock;

/// What `ServerInfoService` and the `toolgate_build_info` metric report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuildInfo {
    pub version: &'static str,
    /// git's short hash, or "unknown" for a build outside a checkout.
    pub commit: &'static str,
}

/// The commit reported when the binary named none.
pub const UNKNOWN_COMMIT: &str = "unknown";

static BUILD: OnceLock<BuildInfo> = OnceLock::new();

/// Records the running build; the first call wins (a process runs one binary), and a
/// later one with different facts is handed back.
pub fn set(info: BuildInfo) -> Result<(), BuildInfo> {
    match BUILD.set(info) {
        Ok(()) => Ok(()),
        Err(_) if BUILD.get() == Some(&info) => Ok(()),
        Err(info) => Err(info),
    }
}

/// The running build, as the binary gave it.
pub fn get() -> BuildInfo {
    BUILD.get().copied().unwrap_or(BuildInfo {
        version: env!("CARGO_PKG_VERSION"),
        commit: UNKNOWN_COMMIT,
    })
}

#[cfg(test)]
mod tests {
    use super::{BuildInfo, get, set};

    #[test]
    fn the_first_build_told_stands() {
        let built = BuildInfo {
            version: "1.2.3",
            commit: "abc1234",
        };
        assert_eq!(set(built), Ok(()));
        assert_eq!(set(built), Ok(()), "the same facts again are no conflict");
        let other = BuildInfo {
            commit: "def5678",
            ..built
        };
        assert_eq!(set(other), Err(other));
        assert_eq!(get(), built);
    }
}
