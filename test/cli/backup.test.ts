// `vpn-access backup` and `restore` on real data folders: a backup taken while the server writes holds
// every session it acknowledged before the backup began, the keys (the subscription URL is the same
// after a restore) and the certificates; every refusal is clear and changes nothing, and a restore
// that fails half-way puts back what was there.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { BackupRefused } from '../../server/backup/files.ts';
import { makeBackup } from '../../server/backup/make.ts';
import { restoreBackup } from '../../server/backup/restore.ts';
import { childEnv, printedToken, runCli, serve, type ServeProcess, tokenCli } from '../helpers/cli.ts';
import { CLI, NODE, removeDir, ROOT, tempDir } from '../helpers/server.ts';

type Run = ReturnType<typeof runCli>;
const cli = (args: string[]): Run => runCli(args, 60_000);
/** The same, without blocking this process (the server's requests go on meanwhile). */
const cliAsync = (args: string[]): Promise<Run> =>
  new Promise((resolve) => {
    const child = spawn(NODE, [CLI, ...args], { cwd: ROOT, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('exit', (status) => resolve({ status, stdout, stderr }));
  });
const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const mode = (path: string) => statSync(path).mode & 0o777;

test('a backup taken while the server writes restores every acknowledged session, the keys and the certificate', async () => {
  const root = tempDir('vad-backup-');
  const cleanup: ServeProcess[] = [];
  try {
    const first = await serve(join(root, 'data'), ['--quiet', '--rate-limit', '100000/60', '--tls', 'on']);
    cleanup.push(first);
    const token = printedToken(first.stdout())!;
    const H = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const api = async (base: string, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${base}${path}`, { method, headers: body === undefined ? { authorization: H.authorization } : H, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      return { status: res.status, json: (await res.json().catch(() => undefined)) as any };
    };
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0'; // the folder's own self-signed certificate, on loopback
    const sub = await api(first.baseUrl, 'PUT', '/subscriptions/alice');
    assert.equal(sub.status, 200, JSON.stringify(sub.json));
    const hook = await api(first.baseUrl, 'POST', '/webhooks', { url: 'https://hooks.example.net/h', events: ['session_end'] });
    assert.equal(hook.status, 201, JSON.stringify(hook.json));

    // Sessions keep being made while the backup runs; those acknowledged before it began must all be in it.
    const acked: string[] = [];
    let stop = false;
    const writer = (async () => {
      for (let i = 0; !stop && i < 2000; i++) {
        const r = await api(first.baseUrl, 'POST', '/sessions', { client_id: `c-${i % 5}`, zone: 'de-fra', reusable: true });
        assert.equal(r.status, 201);
        acked.push(r.json.id);
      }
    })();
    while (acked.length < 20) await new Promise((r) => setTimeout(r, 10));
    const before = [...acked];
    const out = join(root, 'backup');
    const made = await cliAsync(['backup', '--data-dir', join(root, 'data'), '--out', out]);
    stop = true;
    await writer;
    assert.equal(made.status, 0, made.stderr);
    assert.match(made.stdout, /^backed up .* the database \([\d.]+ MiB, schema \d+\), subscription\.key, webhook\.key, tls\/self-signed-cert\.pem, tls\/self-signed-key\.pem\n/);

    // The backup holds secrets: private to its owner, and its manifest names every file with its checksum.
    assert.equal(mode(out), 0o700);
    const manifest = JSON.parse(readFileSync(join(out, 'backup.json'), 'utf8'));
    assert.deepEqual(manifest.files.map((f: { path: string }) => f.path), ['vpn-access.db', 'subscription.key', 'webhook.key', 'tls/self-signed-cert.pem', 'tls/self-signed-key.pem']);
    for (const f of manifest.files) {
      assert.equal(mode(join(out, f.path)), 0o600, f.path);
      assert.equal(sha(join(out, f.path)), f.sha256, f.path);
    }
    for (const key of ['subscription.key', 'webhook.key', 'tls/self-signed-key.pem']) assert.equal(sha(join(out, key)), sha(join(root, 'data', key)), key);

    first.kill();
    await first.exited;
    const restored = cli(['restore', '--from', out, '--data-dir', join(root, 'restored')]);
    assert.equal(restored.status, 0, restored.stderr);
    assert.match(restored.stdout, /^restored the backup of \S+ \(schema \d+\) into .*restored\nstart it with: vpn-access serve --data-dir /);

    const second = await serve(join(root, 'restored'), ['--quiet', '--tls', 'on']);
    cleanup.push(second);
    {
      assert.equal(printedToken(second.stdout()), undefined, 'the restored folder keeps its tokens: no new owner token');
      for (const id of before) assert.equal((await api(second.baseUrl, 'GET', `/sessions/${id}`)).status, 200, `session ${id} acknowledged before the backup`);
      // The subscription key came back: the client's URL is the one handed out before (on this server's port), and it answers.
      const url = new URL((await api(second.baseUrl, 'GET', '/subscriptions/alice')).json.url);
      assert.equal(url.pathname, new URL(sub.json.url).pathname);
      assert.equal((await fetch(url)).status, 200);
      assert.equal((await api(second.baseUrl, 'GET', `/webhooks/${hook.json.id}`)).status, 200);
    }
  } finally {
    for (const s of cleanup) if (s.child.exitCode === null && s.child.signalCode === null) s.kill('SIGKILL');
    delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    removeDir(root);
  }
});

test('backup and restore refuse what they cannot do, say why, and change nothing', async () => {
  const root = tempDir('vad-backup-no-');
  try {
    const data = join(root, 'data');
    assert.equal(tokenCli(['create', '--customer', 'acme', '--role', 'owner', '--data-dir', data]).status, 0);

    // backup
    let r = cli(['backup', '--data-dir', join(root, 'none'), '--out', join(root, 'b0')]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /no database in .*none: check --data-dir/);
    assert.equal(existsSync(join(root, 'b0')), false);
    mkdirSync(join(root, 'full'));
    writeFileSync(join(root, 'full', 'x'), 'x');
    r = cli(['backup', '--data-dir', data, '--out', join(root, 'full')]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /full is a file or a folder that is not empty: back up into a new folder/);
    r = cli(['backup', '--data-dir', data, '--out', join(root, 'full', 'x')]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /x is a file or a folder that is not empty/);
    r = cli(['backup', '--database', 'postgres://u:p@127.0.0.1:1/db', '--out', join(root, 'b1')]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /on PostgreSQL, back up the database itself \(pg_dump\)/);
    r = cli(['backup', '--data-dir', data]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /backup needs --out DIR/);
    const good = join(root, 'good');
    assert.equal(cli(['backup', '--data-dir', data, '--out', good]).status, 0);

    // restore: from what is not a backup, or a damaged one
    r = cli(['restore', '--from', join(root, 'full'), '--data-dir', join(root, 't')]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /is not a backup made by vpn-access backup \(backup\.json: missing\)/);
    const damaged = join(root, 'damaged');
    cpSync(good, damaged, { recursive: true });
    const keyFile = join(damaged, 'webhook.key');
    if (existsSync(keyFile)) writeFileSync(keyFile, 'AAAA' + readFileSync(keyFile, 'utf8').slice(4));
    else {
      const db = readFileSync(join(damaged, 'vpn-access.db'));
      db[db.length - 1] ^= 0xff;
      writeFileSync(join(damaged, 'vpn-access.db'), db);
    }
    r = cli(['restore', '--from', damaged, '--data-dir', join(root, 't')]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /the backup is damaged: \S+ is not the file it was/);
    const hostile = join(root, 'hostile');
    cpSync(good, hostile, { recursive: true });
    const m = JSON.parse(readFileSync(join(hostile, 'backup.json'), 'utf8'));
    m.files.push({ path: '../../etc/evil', bytes: 1, sha256: 'x' });
    writeFileSync(join(hostile, 'backup.json'), JSON.stringify(m));
    r = cli(['restore', '--from', hostile, '--data-dir', join(root, 't')]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /names a file a data folder does not hold: "..\/..\/etc\/evil"/);
    const newer = join(root, 'newer');
    cpSync(good, newer, { recursive: true });
    const db = new DatabaseSync(join(newer, 'vpn-access.db'));
    db.exec('PRAGMA user_version = 9999');
    db.close();
    const n = JSON.parse(readFileSync(join(newer, 'backup.json'), 'utf8'));
    n.files[0].sha256 = sha(join(newer, 'vpn-access.db'));
    writeFileSync(join(newer, 'backup.json'), JSON.stringify(n));
    r = cli(['restore', '--from', newer, '--data-dir', join(root, 't')]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /made by a newer vpn-access \(database schema 9999; this one knows up to \d+\)/);
    const notDb = join(root, 'not-db');
    cpSync(good, notDb, { recursive: true });
    writeFileSync(join(notDb, 'vpn-access.db'), 'not a database at all, but listed with its right checksum........................................');
    const nd = JSON.parse(readFileSync(join(notDb, 'backup.json'), 'utf8'));
    nd.files[0].sha256 = sha(join(notDb, 'vpn-access.db'));
    writeFileSync(join(notDb, 'backup.json'), JSON.stringify(nd));
    r = cli(['restore', '--from', notDb, '--data-dir', join(root, 't')]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /the backup's vpn-access\.db is not an SQLite database/);
    assert.equal(existsSync(join(root, 't')), false, 'nothing made by a refused restore');

    // restore into a folder a server runs in, or one that holds a database already
    const running = await serve(data, ['--quiet']);
    try {
      const dbBefore = sha(join(data, 'vpn-access.db'));
      r = cli(['restore', '--from', good, '--data-dir', data, '--force']);
      assert.equal(r.status, 2);
      assert.match(r.stderr, /cannot restore now: the data folder .* is in use by another vpn-access server \(pid \d+/);
      assert.equal(sha(join(data, 'vpn-access.db')), dbBefore);
    } finally {
      running.kill();
      await running.exited;
    }
    const target = join(root, 'target');
    assert.equal(tokenCli(['create', '--customer', 'other', '--role', 'owner', '--data-dir', target]).status, 0);
    const targetDb = sha(join(target, 'vpn-access.db'));
    r = cli(['restore', '--from', good, '--data-dir', target]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /already holds a data folder's files \(vpn-access\.db.*\); restore replaces them: add --force \(they are moved aside, not deleted\)/);
    assert.equal(sha(join(target, 'vpn-access.db')), targetDb);
    r = cli(['restore', '--from', good, '--data-dir', target, '--force']);
    assert.equal(r.status, 0, r.stderr);
    const aside = readdirSync(target).find((f) => f.startsWith('replaced-'))!;
    assert.match(r.stdout, new RegExp(`what it replaced is in .*${aside}`));
    assert.equal(sha(join(target, aside, 'vpn-access.db')), targetDb, 'the replaced database is kept');
    assert.equal(sha(join(target, 'vpn-access.db')), sha(join(good, 'vpn-access.db')));
    const listed = tokenCli(['list', '--data-dir', target]);
    assert.match(listed.stdout, /acme/);
    assert.doesNotMatch(listed.stdout, /other/);
  } finally {
    removeDir(root);
  }
});

test('a restore whose copy fails leaves the folder as it was (a backup whose copy fails leaves nothing); one that succeeds names the restored customers', async () => {
  const root = tempDir('vad-backup-fail-');
  try {
    const source = join(root, 'source');
    assert.equal(tokenCli(['create', '--customer', 'acme', '--role', 'owner', '--data-dir', source]).status, 0);
    writeFileSync(join(source, 'subscription.key'), 'a'.repeat(44) + '\n', { mode: 0o600 });
    const good = join(root, 'good');
    const made = await makeBackup(source, good);
    assert.deepEqual(made.others, ['subscription.key']);

    const target = join(root, 'target');
    assert.equal(tokenCli(['create', '--customer', 'other', '--role', 'owner', '--data-dir', target]).status, 0);
    writeFileSync(join(target, 'subscription.key'), 'b'.repeat(44) + '\n', { mode: 0o600 });
    const before = { db: sha(join(target, 'vpn-access.db')), key: sha(join(target, 'subscription.key')) };
    // The key's copy cannot take its temporary name (a folder is there): the copy fails after the database came in.
    mkdirSync(join(target, 'subscription.key.partial', 'x'), { recursive: true });
    await assert.rejects(restoreBackup(good, target, { force: true }), (e: Error) => {
      assert.ok(e instanceof BackupRefused);
      assert.match(e.message, /^the backup could not be copied in, and the folder is as it was: /);
      return true;
    });
    assert.deepEqual({ db: sha(join(target, 'vpn-access.db')), key: sha(join(target, 'subscription.key')) }, before);
    assert.deepEqual(readdirSync(target).filter((f) => f.startsWith('replaced-')), [], 'nothing left aside');

    // A backup whose key cannot be copied (here a folder where the key file should be) leaves no half-made backup.
    const odd = join(root, 'odd');
    assert.equal(tokenCli(['create', '--customer', 'odd', '--role', 'owner', '--data-dir', odd]).status, 0);
    mkdirSync(join(odd, 'webhook.key'));
    await assert.rejects(makeBackup(odd, join(root, 'odd-backup')), /^BackupRefused: the keys and certificates could not be copied: /);
    assert.equal(existsSync(join(root, 'odd-backup')), false);

    removeDir(join(target, 'subscription.key.partial'));
    const done = await restoreBackup(good, target, { force: true });
    assert.deepEqual(done.customers, ['acme']);
    assert.match(done.replaced_into ?? '', /replaced-/);
    assert.equal(sha(join(target, 'subscription.key')), sha(join(source, 'subscription.key')));
  } finally {
    removeDir(root);
  }
});

test('backup --into DIR --keep N: a dated folder each time, the oldest beyond N removed, nothing else in DIR touched', () => {
  const root = tempDir('vad-backup-keep-');
  try {
    const data = join(root, 'data');
    assert.equal(tokenCli(['create', '--customer', 'acme', '--role', 'owner', '--data-dir', data]).status, 0);
    const into = join(root, 'backups');
    mkdirSync(join(into, 'vpn-access-backup-2001-01-01T00-00-00.000Z'), { recursive: true }); // named so, but no manifest: not ours
    writeFileSync(join(into, 'notes.txt'), 'kept');
    const made: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = cli(['backup', '--data-dir', data, '--into', into, '--keep', '2']);
      assert.equal(r.status, 0, r.stderr);
      made.push(/^backed up .* into (\S+): /.exec(r.stdout)![1]);
      if (i >= 2) assert.match(r.stdout, /\nremoved the 1 oldest backup in .* \(kept the newest 2\): vpn-access-backup-/);
      else assert.doesNotMatch(r.stdout, /removed/);
    }
    assert.equal(mode(into), 0o700);
    const left = readdirSync(into).sort();
    assert.deepEqual(left, ['notes.txt', 'vpn-access-backup-2001-01-01T00-00-00.000Z', ...made.slice(2).map((p) => p.slice(into.length + 1))].sort());
    for (const p of made.slice(2)) assert.ok(existsSync(join(p, 'backup.json')));

    for (const [args, said] of [
      [['--out', join(root, 'x'), '--into', into], /takes --out DIR or --into DIR, not both/],
      [['--out', join(root, 'x'), '--keep', '2'], /--keep N goes with --into DIR/],
      [['--into', into, '--keep', '0'], /--keep takes a whole number of backups, 1 or more, not "0"/],
      [['--into', into, '--keep', 'many'], /not "many"/],
    ] as const) {
      const r = cli(['backup', '--data-dir', data, ...args]);
      assert.equal(r.status, 2, args.join(' '));
      assert.match(r.stderr, said);
    }
    assert.equal(readdirSync(into).length, left.length, 'a refused backup leaves the folder as it was');
  } finally {
    removeDir(root);
  }
});
