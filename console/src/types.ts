// The API's messages under the names the pages use. Their shapes are generated from
// the proto (./proto.ts, checked by tests/it/console_proto.rs), never written here.

import type { GetPrincipalResponse, PreviewTeamAdminSettingsResponse, U64 } from "./proto";

export type {
  Approval,
  AuditEvent,
  AutoRunControls,
  ClientDecision,
  ClientDecisionReport,
  DecidedCall,
  DecisionFilter,
  DecisionRecord,
  ImpactExample,
  ImpactGroup,
  IssuedToken,
  TeamAdminSettings,
  U64,
  UserSettings,
} from "./proto";

/** Who the caller is, as GetPrincipal answers. */
export type Principal = GetPrincipalResponse;

/** What a proposed policy would change in the logged decisions. */
export type Preview = PreviewTeamAdminSettingsResponse;

export function num(v: U64 | undefined): number {
  return v === undefined ? 0 : Number(v);
}
