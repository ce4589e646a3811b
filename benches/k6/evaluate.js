// k6 gRPC load on a running toolgate: Health/Check (the transport's floor), then
// Evaluate, then EvaluateBatch, each for DURATION with VUS virtual users, through
// server reflection (no .proto files needed). A third-party view of
// `cargo bench --bench load`; `benches/k6/run.sh` starts a server and runs this.
//
//   TOOLGATE_ADDR=127.0.0.1:7070 TOOLGATE_TOKEN=$(cat toolgate-data/bootstrap-token) \
//     k6 run benches/k6/evaluate.js
//
// The token must be an operator's (setup writes team k6's policy). The summary's
// last line is the figures as JSON.
import grpc from 'k6/net/grpc';
import { check } from 'k6';

const addr = __ENV.TOOLGATE_ADDR || '127.0.0.1:7070';
const token = __ENV.TOOLGATE_TOKEN;
const vus = parseInt(__ENV.VUS || '32');
const duration = parseInt(__ENV.DURATION || '10');
const team = 'k6';

export const options = {
  scenarios: {
    health: { executor: 'constant-vus', vus, duration: `${duration}s`, exec: 'health' },
    evaluate: {
      executor: 'constant-vus', vus, duration: `${duration}s`, exec: 'evaluate',
      startTime: `${duration + 1}s`,
    },
    evaluate_batch: {
      executor: 'constant-vus', vus, duration: `${duration}s`, exec: 'evaluateBatch',
      startTime: `${2 * (duration + 1)}s`,
    },
  },
  summaryTrendStats: ['med', 'p(99)', 'max'],
  // a sub-metric per scenario, so the summary reports each RPC on its own
  thresholds: {
    'grpc_req_duration{scenario:health}': ['max>=0'],
    'grpc_req_duration{scenario:evaluate}': ['max>=0'],
    'grpc_req_duration{scenario:evaluate_batch}': ['max>=0'],
    'iterations{scenario:health}': ['count>=0'],
    'iterations{scenario:evaluate}': ['count>=0'],
    'iterations{scenario:evaluate_batch}': ['count>=0'],
    checks: ['rate==1'],
  },
};

const client = new grpc.Client();
const params = { metadata: { authorization: `Bearer ${token}` } };
let connected = false;

function connect() {
  if (!connected) {
    client.connect(addr, { plaintext: true, reflect: true });
    connected = true;
  }
}

export function setup() {
  if (!token) throw new Error('set TOOLGATE_TOKEN to an operator token');
  connect();
  const admin = client.invoke('toolgate.v1.AdminService/UpdateTeamAdminSettings', {
    team_id: team,
    auto_run_controls: { enabled: true, mcp_tool_allowlist: ['jira:*', 'github:get_*'] },
  }, params);
  check(admin, { 'seeded admin settings': (r) => r && r.status === grpc.StatusOK });
  const user = client.invoke('toolgate.v1.UserSettingsService/UpdateUserSettings', {
    settings: { team_id: team, user_id: 'alice', use_yolo_mode: true },
  }, params);
  check(user, { 'seeded user settings': (r) => r && r.status === grpc.StatusOK });
  client.close();
  connected = false;
}

export function health() {
  connect();
  const r = client.invoke('grpc.health.v1.Health/Check', { service: '' });
  check(r, { 'health ok': (r) => r && r.status === grpc.StatusOK });
}

export function evaluate() {
  connect();
  const r = client.invoke('toolgate.v1.PolicyService/Evaluate', {
    team_id: team, user_id: 'alice', call: { mcp: { server: 'jira', tool: 'create_ticket' } },
  }, params);
  check(r, {
    'evaluate allows': (r) => r && r.status === grpc.StatusOK && r.message.outcome === 'OUTCOME_ALLOW',
  });
}

const batch = [];
for (let i = 0; i < 100; i++) {
  batch.push({ mcp: { server: i % 2 ? 'jira' : 'github', tool: i % 4 ? `get_${i}` : `tool${i}` } });
}

export function evaluateBatch() {
  connect();
  const r = client.invoke('toolgate.v1.PolicyService/EvaluateBatch', {
    team_id: team, user_id: 'alice', calls: batch,
  }, params);
  check(r, { 'batch answered': (r) => r && r.status === grpc.StatusOK && r.message.decisions.length === 100 });
}

export function handleSummary(data) {
  const m = data.metrics;
  const figures = { bench: 'k6', vus, duration_s: duration };
  for (const s of ['health', 'evaluate', 'evaluate_batch']) {
    const d = m[`grpc_req_duration{scenario:${s}}`];
    const it = m[`iterations{scenario:${s}}`];
    if (!d || !it) continue;
    figures[s] = {
      rps: Math.round(it.values.count / duration),
      p50_ms: d.values.med, p99_ms: d.values['p(99)'], max_ms: d.values.max,
    };
  }
  const line = JSON.stringify(figures);
  return { stdout: `${line}\n` };
}
