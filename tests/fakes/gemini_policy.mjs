// Evaluates calls against Gemini CLI policy TOML with the CLI's own policy engine.
// usage: node gemini_policy.mjs GEMINI_PACKAGE_DIR POLICY_DIR CALLS.json [admin]
// (admin: the files are read as the admin tier, Gemini CLI's ADMIN_POLICY_TIER, 5)
// CALLS.json: [{"name": "run_shell_command", "args": {"command": "ls"}}, ...]
// prints a JSON array of decisions (allow | ask_user | deny), in order; exits 1 when
// the policy files do not load cleanly.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [pkg, policyDir, callsFile, tierName] = process.argv.slice(2);
const bundle = path.join(pkg, "bundle");
let engineModule;
// the package bundles its code in hashed chunks: find the one that exports both
for (const file of fs.readdirSync(bundle).filter((f) => f.endsWith(".js")).sort()) {
  const text = fs.readFileSync(path.join(bundle, file), "utf8");
  if (!/export\s*\{[^}]*\bloadPoliciesFromToml\b/s.test(text)) continue;
  const m = await import(pathToFileURL(path.join(bundle, file)).href);
  if (m.loadPoliciesFromToml && m.PolicyEngine) {
    engineModule = m;
    break;
  }
}
if (!engineModule) {
  console.error("no bundle chunk exports loadPoliciesFromToml and PolicyEngine");
  process.exit(2);
}
const { loadPoliciesFromToml, PolicyEngine } = engineModule;
// tier 2 (a user's policies), or the admin tier
const tier = tierName === "admin" ? 5 : 2;
const { rules, checkers, errors } = await loadPoliciesFromToml([policyDir], () => tier);
const fatal = errors.filter((e) => e.severity !== "warning");
if (fatal.length) {
  console.error(JSON.stringify(fatal, null, 2));
  process.exit(1);
}
const engine = new PolicyEngine({ rules, checkers });
const calls = JSON.parse(fs.readFileSync(callsFile, "utf8"));
const out = [];
for (const call of calls) {
  const r = await engine.check({ name: call.name, args: call.args ?? {} }, call.server);
  out.push(r.decision);
}
console.log(JSON.stringify(out));
process.exit(0);
