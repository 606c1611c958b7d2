// The documentation holds together: the README stays a short entry point (its quick starts
// intact), every relative link of the README and of docs/ reaches a file (and a heading, when it
// names one), server/README.md's code map names every server source file, and no issue number
// is left in code or docs (history lives in git).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..', '..');
const SKIP = new Set(['node_modules', 'dist', 'release', 'test-results', 'playwright-report']);

function* files(dir: string, keep: (name: string) => boolean): Generator<string> {
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name) || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* files(path, keep);
    else if (keep(name)) yield path;
  }
}

const rel = (path: string) => relative(ROOT, path).split(sep).join('/');
const read = (path: string) => readFileSync(path, 'utf8');

/** The markdown documents whose links are checked: README.md and docs/*.md. */
function documents(): string[] {
  return [join(ROOT, 'README.md'), ...[...files(join(ROOT, 'docs'), (n) => n.endsWith('.md'))].sort()];
}

/** Markdown text without fenced code blocks and inline code spans (links there are not links). */
export function prose(text: string): string {
  return text
    .replace(/^(`{3,}|~{3,})[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '')
    .replace(/`[^`\n]*`/g, '');
}

/** The targets of the inline links and images of a markdown text. */
export function linkTargets(text: string): string[] {
  const out: string[] = [];
  for (const m of prose(text).matchAll(/!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push(m[1]!);
  return out;
}

/** GitHub's anchors of a markdown text's headings (lower case, punctuation dropped, spaces to hyphens, repeats numbered). */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const withoutCode = text.replace(/^(`{3,}|~{3,})[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const m of withoutCode.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** What is wrong with one link of the document at `from` (absolute), or null when it reaches its file and heading. */
export function brokenLink(from: string, target: string): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return null; // http:, https:, mailto: ...
  const hash = target.indexOf('#');
  const path = hash === -1 ? target : target.slice(0, hash);
  const anchor = hash === -1 ? '' : decodeURIComponent(target.slice(hash + 1));
  const file = path === '' ? from : resolve(dirname(from), decodeURIComponent(path));
  if (!existsSync(file)) return `${target}: no file ${rel(file)}`;
  if (anchor && file.endsWith('.md') && !anchors(read(file)).has(anchor)) return `${target}: no heading #${anchor} in ${rel(file)}`;
  return null;
}

test('README.md is a short entry point of at most 150 lines, its quick starts intact', () => {
  const readme = read(join(ROOT, 'README.md'));
  const lines = readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0);
  assert.ok(lines <= 150, `README.md has ${lines} lines; move reference material to docs/ (at most 150)`);
  for (const command of ['npm ci && npm run build && npm run serve', 'bash .ci/run', 'npm test', 'npm start']) {
    assert.ok(readme.includes(command), `README.md shows \`${command}\``);
  }
  for (const page of ['cli', 'api', 'cluster', 'security', 'webhooks', 'subscriptions-and-quotas', 'operations', 'architecture', 'desktop']) {
    assert.ok(readme.includes(`](docs/${page}.md`), `README.md links docs/${page}.md`);
  }
});

test('every relative link of README.md and docs/ reaches its file and heading', () => {
  const problems: string[] = [];
  let checked = 0;
  for (const doc of documents()) {
    for (const target of linkTargets(read(doc))) {
      checked++;
      const why = brokenLink(doc, target);
      if (why) problems.push(`${rel(doc)}: ${why}`);
    }
  }
  assert.ok(checked > 20, `found the links (${checked})`);
  assert.deepEqual(problems, []);
});

test('server/README.md names every server source file', () => {
  const map = read(join(ROOT, 'server', 'README.md'));
  const missing: string[] = [];
  for (const file of files(join(ROOT, 'server'), (n) => n.endsWith('.ts') && !n.endsWith('.d.ts'))) {
    const path = relative(join(ROOT, 'server'), file).split(sep).join('/');
    const escaped = path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    // Named as itself: not as the tail of a longer path (store/pg/store.ts does not name store/store.ts).
    if (!new RegExp(`(^|[^\\w./-])${escaped}(?![\\w/-])`, 'm').test(map)) missing.push(path);
  }
  assert.deepEqual(missing.sort(), [], 'add each to the code map of server/README.md with one line on its job');
});

test('no issue number in code, tests or docs', () => {
  // Built from parts so that this file does not match itself.
  const tag = new RegExp(['\\bissues?', '\\s+#?\\d+'].join(''), 'i');
  const found: string[] = [];
  const roots = ['server', 'renderer', 'main', 'common', 'preload', 'docs', 'test', 'bench', 'scripts'];
  const text = /\.(ts|tsx|mts|cts|js|mjs|css|html|md|json)$/;
  const paths = [join(ROOT, 'README.md'), ...roots.flatMap((r) => (existsSync(join(ROOT, r)) ? [...files(join(ROOT, r), (n) => text.test(n))] : []))];
  for (const path of paths) {
    read(path)
      .split('\n')
      .forEach((line, i) => {
        if (tag.test(line)) found.push(`${rel(path)}:${i + 1}: ${line.trim()}`);
      });
  }
  assert.deepEqual(found, [], 'history lives in git: say what the code does, not which issue asked for it');
});

test('the link checker finds broken links and headings, and ignores code', () => {
  const doc = join(ROOT, 'docs', 'api.md');
  assert.equal(brokenLink(doc, 'cli.md'), null);
  assert.equal(brokenLink(doc, 'https://example.org/missing.md'), null);
  assert.match(brokenLink(doc, 'no-such-page.md')!, /no file docs\/no-such-page\.md/);
  assert.match(brokenLink(doc, 'cli.md#no-such-heading')!, /no heading #no-such-heading/);
  assert.deepEqual(linkTargets('see [a](a.md) and `[b](b.md)`\n```\n[c](c.md)\n```\n![d](d.png)'), ['a.md', 'd.png']);
  assert.deepEqual([...anchors("# The `serve` flags: a, b\n## Don't panic\n## Don't panic")], ['the-serve-flags-a-b', 'dont-panic', 'dont-panic-1']);
});
