// `npm run bench`: every benchmark in one run, each printing its figures beside the baseline
// measured in the same run. Pass names to run a subset: `npm run bench -- startup api dataplane connections proxy usage cluster ui scale`.
// `npm run bench -- geo` (not in the default set: `cluster` prints the same figure) measures the
// geo proxy relayed node to node alone, in seconds and without PostgreSQL.
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const all = ['startup', 'api', 'dataplane', 'connections', 'proxy', 'usage', 'cluster', 'ui', 'scale'];
const chosen = process.argv.slice(2).length ? process.argv.slice(2) : all;
let failed = false;
for (const name of chosen) {
  const file = fileURLToPath(new URL(`./${name}.ts`, import.meta.url));
  if (!existsSync(file)) {
    console.log(`\n== ${name}: no benchmark file (${file})`);
    continue;
  }
  const r = spawnSync(process.execPath, [file], { stdio: 'inherit' });
  if (r.status !== 0) {
    failed = true;
    console.log(`== ${name}: exited with ${r.status ?? r.signal}`);
  }
}
process.exit(failed ? 1 : 0);
