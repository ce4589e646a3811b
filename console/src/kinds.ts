// Every audit event kind the server records, by its protobuf name without the
// `AUDIT_EVENT_KIND_` prefix, in the proto's order: taken from the generated enum
// (./proto.ts), so a kind added to the API is offered without a step here.

import { AuditEventKind } from "./proto";

export const AUDIT_KINDS: string[] = AuditEventKind.filter((k) => k !== "AUDIT_EVENT_KIND_UNSPECIFIED").map((k) => k.replace(/^AUDIT_EVENT_KIND_/, ""));
