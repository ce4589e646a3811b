//! What a principal may see of the server's teams, for clients that adapt to their
//! caller (the console's team list).

use super::{Service, ServiceError};
use crate::auth::{Principal, Role, is_reserved_team};

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
