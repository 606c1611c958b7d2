// libfaketime (Debian's faketime package, which .ci/run installs): LD_PRELOADed with FAKETIME, it
// shifts one process's clock, and only that process's: a machine whose clock is off, on this one.
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The environment that runs a child process `offset` off (libfaketime's syntax: '+30s', '-2m'). */
export function clockOff(offset: string): Record<string, string> {
  const library = readdirSync('/usr/lib', { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => join('/usr/lib', d.name, 'faketime', 'libfaketime.so.1'))
    .find((f) => existsSync(f));
  assert.ok(library, 'libfaketime is installed (apt-get install faketime)');
  return { LD_PRELOAD: library, FAKETIME: offset };
}
