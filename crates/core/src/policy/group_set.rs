//! A caller's set of groups, hashed once when its credential is read: a decision
//! finds the combination made for the set by one integer and, for the same
//! credential, one pointer comparison, instead of hashing and comparing names.

use rustc_hash::FxHasher;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::{Arc, LazyLock};

/// Group names, sorted and each once (as
/// [`normalise_groups`](super::groups::normalise_groups) gives them), shared by
/// every clone. Reads as the slice of names.
#[derive(Clone)]
pub struct GroupSet {
    names: Arc<[String]>,
    hash: u64,
}

impl GroupSet {
    /// The set of `names`, sorted and each once whatever order they come in.
    pub fn new(mut names: Vec<String>) -> Self {
        if !names.is_sorted_by(|a, b| a < b) {
            names.sort_unstable();
            names.dedup();
        }
        let mut h = FxHasher::default();
        names.hash(&mut h);
        Self {
            names: names.into(),
            hash: h.finish(),
        }
    }

    /// The set of no group, shared: a principal deciding for another carries none.
    pub fn empty() -> &'static GroupSet {
        static EMPTY: LazyLock<GroupSet> = LazyLock::new(|| GroupSet::new(Vec::new()));
        &EMPTY
    }
}

impl Default for GroupSet {
    fn default() -> Self {
        Self::empty().clone()
    }
}

impl From<Vec<String>> for GroupSet {
    fn from(names: Vec<String>) -> Self {
        Self::new(names)
    }
}

impl Deref for GroupSet {
    type Target = [String];

    fn deref(&self) -> &[String] {
        &self.names
    }
}

impl PartialEq for GroupSet {
    fn eq(&self, other: &Self) -> bool {
        // a credential's own set (the usual lookup) is the same allocation
        Arc::ptr_eq(&self.names, &other.names)
            || (self.hash == other.hash && self.names == other.names)
    }
}

impl Eq for GroupSet {}

impl Hash for GroupSet {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl fmt::Debug for GroupSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.names.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::GroupSet;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// Two sets are equal, and hash alike, exactly when they name the same
        /// groups, whatever the order or repeats they were given in.
        #[test]
        fn equal_exactly_when_the_names_are(
            a in proptest::collection::vec("[a-c]{1,2}", 0..6),
            b in proptest::collection::vec("[a-c]{1,2}", 0..6),
        ) {
            let (sa, sb) = (GroupSet::new(a.clone()), GroupSet::new(b.clone()));
            let model = |v: &Vec<String>| v.iter().cloned().collect::<BTreeSet<_>>();
            prop_assert_eq!(sa == sb, model(&a) == model(&b));
            if sa == sb {
                prop_assert_eq!(sa.hash, sb.hash);
            }
            let names: Vec<String> = model(&a).into_iter().collect();
            prop_assert_eq!(&*sa, &names[..]);
        }
    }

    #[test]
    fn the_empty_set_is_shared_and_empty() {
        assert!(GroupSet::empty().is_empty());
        assert_eq!(GroupSet::default(), GroupSet::new(Vec::new()));
    }
}
