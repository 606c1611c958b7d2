// A second start of the desktop app (a second Node process running the bundled main with
// the stand-in, same user-data folder) does not start a second app: it finds the first one
// holding the lock, hands over its command line and quits; the first shows and focuses its
// window, which was hidden to the tray.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test, expect } from '../fixtures.ts';
import { runHostProcess } from './second-instance.ts';

test('a second instance focuses the first and quits', async ({ app, desktop }) => {
  const d = desktop!;
  await app.waitReady();
  expect(readFileSync(join(d.userData, 'SingletonLock'), 'utf8')).toBe(String(process.pid));
  const win = d.window;
  win.close(); // hidden to the tray
  expect(win.visible).toBe(false);
  const focus = win.focusCount;
  const second: unknown[][] = [];
  const onSecond = (...a: unknown[]) => second.push(a);
  (d.electron.app as NodeJS.EventEmitter).on('second-instance', onSecond);
  try {
    const r = await runHostProcess(d.userData);
    expect(r.stdout).toContain('exit 0 lock=refused windows=0');
    expect(r.code).toBe(0);
    await expect.poll(() => second.length).toBe(1);
    // The first instance heard the second one's command line and working directory.
    expect(second[0][1]).toEqual(expect.arrayContaining([`--user-data-dir=${d.userData}`]));
    expect(typeof second[0][2]).toBe('string');
    expect(win.visible).toBe(true);
    expect(win.focusCount).toBe(focus + 1);
    expect(d.state.windows.filter((w) => !w.isDestroyed())).toHaveLength(1);
    await expect(app.nav('Sessions')).toBeVisible();
  } finally {
    (d.electron.app as NodeJS.EventEmitter).off('second-instance', onSecond);
  }
});
