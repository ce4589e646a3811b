//! What a principal may see of the server's teams, for clients that adapt to their
//! caller (the console's team list), and whose groups' policies apply to its requests.

use super::{Service, ServiceError};
use crate::auth::{Principal, Role, is_reserved_team};
use crate::policy::group_set::GroupSet;

/// At most this many teams are listed for an operator.
pub const MAX_VISIBLE_TEAMS: usize = 1000;

impl Service {
    /// The teams `p` may read: its own; for an operator, every team with stored
    /// policy, in name order, at most [`MAX_VISIBLE_TEAMS`].
    pub async fn visible_teams(&self, p: &Principal) -> Result<Vec<String>, ServiceError> {
        if p.role != Role::Operator {
            return Ok(p.team.iter().cloned().collect());
        }
        let mut teams: Vec<String> = self
            .store
            .team_revisions()
            .await?
            .into_iter()
            .map(|(team, _)| team)
            .filter(|team| !is_reserved_team(team))
            .collect();
        teams.sort();
        teams.truncate(MAX_VISIBLE_TEAMS);
        Ok(teams)
    }
}

/// The groups whose policies apply to a request: the caller's own, when it decides
/// its own calls. Another principal deciding for a user (a service, an admin)
/// carries its own groups, not the user's: none apply (docs/groups.md says so).
pub(super) fn caller_groups<'a>(p: &'a Principal, team: &str, user: &str) -> &'a GroupSet {
    let own = p.team.as_deref() == Some(team) && p.user.as_deref() == Some(user);
    if own { &p.groups } else { GroupSet::empty() }
}
