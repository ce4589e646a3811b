// Writes dist/sources.sha256: the SHA-256 of every input of the console's build
// (package.json, package-lock.json, tsconfig.json and every file under src/), in
// sha256sum's format, paths relative to console/, sorted. The binary's build script
// (build.rs at the repository's top) hashes the same files and refuses to build when
// they differ, so a committed dist/ is always the build of the committed sources.
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const here = new URL(".", import.meta.url).pathname;
const files = ["package.json", "package-lock.json", "tsconfig.json"];
const pending = ["src"];
while (pending.length > 0) {
  const dir = pending.pop();
  for (const entry of readdirSync(join(here, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) pending.push(path);
    else files.push(path);
  }
}
// byte order, as Rust sorts: the paths are ASCII
files.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
const lines = files.map((f) => `${createHash("sha256").update(readFileSync(join(here, f))).digest("hex")}  ${f}\n`);
writeFileSync(join(here, "dist", "sources.sha256"), lines.join(""));
