// Loads Gemini CLI's settings with the CLI's own loader, as the CLI does at start.
// usage: GEMINI_CLI_SYSTEM_SETTINGS_PATH=FILE HOME=DIR node gemini_settings.mjs GEMINI_PACKAGE_DIR WORKSPACE_DIR
// prints {"hooks": ..., "hooksConfig": ..., "system": ..., "errors": [...]}: the merged
// hooks as the CLI will run them, and what it read from the system settings file.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [pkg, workspace] = process.argv.slice(2);
const bundle = path.join(pkg, "bundle");
let loadSettings;
// the package bundles its code in hashed chunks: find the one that exports the loader
for (const file of fs.readdirSync(bundle).filter((f) => f.endsWith(".js")).sort()) {
  const text = fs.readFileSync(path.join(bundle, file), "utf8");
  if (!/export\s*\{[^}]*\bloadSettings\b/s.test(text)) continue;
  const m = await import(pathToFileURL(path.join(bundle, file)).href);
  if (m.loadSettings) {
    loadSettings = m.loadSettings;
    break;
  }
}
if (!loadSettings) {
  console.error("no bundle chunk exports loadSettings");
  process.exit(2);
}
const settings = loadSettings(workspace);
console.log(
  JSON.stringify({
    hooks: settings.merged.hooks ?? null,
    hooksConfig: settings.merged.hooksConfig ?? null,
    system: settings.system?.settings ?? null,
    systemPath: settings.system?.path ?? null,
    errors: (settings.errors ?? []).map((e) => e.message),
  }),
);
process.exit(0);
