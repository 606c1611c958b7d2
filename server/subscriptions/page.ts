// The page a browser gets at a subscription URL (Accept: text/html): the owner's announcement
// and support link first, the client's usage against its cap and the renewal date, when access
// ends, and for each app one QR code and one import button, with what to do in the app. Static
// HTML: no script, no outside resource (its CSP says so), light and dark from the system,
// readable on a phone.
import { SUBSCRIPTION_APPS, type SubscriptionUrls } from '../../common/import-links.ts';
import type { ClientUsage } from './userinfo.ts';

export const PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function formatBytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = n;
  let u = 0;
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000;
    u++;
  }
  return `${u === 0 ? v : v.toFixed(v < 10 ? 2 : 1)} ${units[u]}`;
}

const day = (ms: number) => new Date(ms).toLocaleDateString('en-GB', { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' });

function usageSection(u: ClientUsage, now: number): string {
  const used = u.upload + u.download;
  const share = u.total > 0 ? Math.min(1, used / u.total) : 0;
  const over = u.total > 0 && used >= u.total;
  const cap = u.total > 0 ? `${formatBytes(used)} of ${formatBytes(u.total)} used${u.renewsAt ? ' this period' : ''}` : `${formatBytes(used)} used · no data cap`;
  const bar = u.total > 0 ? `<div class="bar${over ? ' over' : ''}" role="progressbar" aria-label="Data used" aria-valuemin="0" aria-valuemax="100" aria-valuenow="${Math.round(share * 100)}"><span style="width:${(share * 100).toFixed(1)}%"></span></div>` : '';
  const renew = u.renewsAt ? `<p>${over ? 'Cut off until' : 'Renews on'} <strong>${day(u.renewsAt)}</strong>.</p>` : '';
  const ends =
    u.expiresAt === null ? '<p>No end date.</p>' : u.expiresAt <= now ? `<p class="warn">Access ended on <strong>${day(u.expiresAt)}</strong>.</p>` : `<p>Access ends on <strong>${day(u.expiresAt)}</strong>.</p>`;
  return `<section aria-labelledby="usage-h"><h2 id="usage-h">Your data</h2><p class="big">${cap}</p>${bar}${over ? '<p class="warn">The data cap is reached: connections are refused until the period renews.</p>' : ''}${renew}${ends}</section>`;
}

async function appSection(sub: SubscriptionUrls, title: string): Promise<string> {
  const { default: QRCode } = await import('qrcode'); // on first use: a start-up cost few servers need
  const cards = await Promise.all(
    SUBSCRIPTION_APPS.map(async (app, i) => {
      const url = app.feedUrl(sub);
      const qr = await QRCode.toString(url, { type: 'svg', margin: 1, errorCorrectionLevel: 'M' });
      return `<article class="app" aria-labelledby="app-${i}">
  <h3 id="app-${i}">${esc(app.app)}</h3>
  <p class="muted">${esc(app.platforms)}</p>
  <div class="qr" role="img" aria-label="QR code of the ${esc(app.app)} subscription URL">${qr}</div>
  <a class="button" href="${esc(app.href(sub, title))}">Import into ${esc(app.app)}</a>
  <p>${esc(app.steps)}</p>
  <label>Subscription URL for ${esc(app.app)}<input readonly value="${esc(url)}"></label>
</article>`;
    }),
  );
  return `<section aria-labelledby="apps-h"><h2 id="apps-h">Add it to your app</h2>
<p>Android: v2rayNG or Hiddify. iPhone and iPad: Streisand, Happ or sing-box. Windows, macOS and Linux: Hiddify or Clash Verge. Scan the QR code from inside the app, or on this device press its Import button.</p>
<div class="apps">${cards.join('\n')}</div></section>`;
}

const STYLE = `:root{color-scheme:light dark;--bg:#f7f7f8;--fg:#17181a;--muted:#5b5f66;--card:#fff;--line:#8a8f98;--accent:#0b57d0;--warn:#a4161a}
@media (prefers-color-scheme:dark){:root{--bg:#121316;--fg:#e9eaec;--muted:#a9adb4;--card:#1c1e22;--line:#80858d;--accent:#8ab4f8;--warn:#ff8a80}}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,sans-serif}
main{max-width:960px;margin:0 auto;padding:16px}h1{font-size:1.5rem;margin:.5rem 0}h2{font-size:1.2rem}h3{margin:.2rem 0}
section{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:16px;margin:16px 0}
.announce{border-color:var(--accent);border-width:2px}.announce p{margin:0;white-space:pre-line;font-weight:600}
.big{font-size:1.2rem;font-weight:600}.muted{color:var(--muted);margin:0}.warn{color:var(--warn);font-weight:600}
.bar{height:12px;border:1px solid var(--line);border-radius:6px;overflow:hidden}.bar span{display:block;height:100%;background:var(--accent)}.bar.over span{background:var(--warn)}
.apps{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:16px}.app{border:1px solid var(--line);border-radius:10px;padding:12px}
.qr{width:180px;max-width:100%;margin:8px 0;background:#fff;padding:4px;border-radius:6px}.qr svg{display:block;width:100%;height:auto}
.button{display:inline-block;background:var(--accent);color:var(--bg);padding:10px 14px;border-radius:8px;text-decoration:none;font-weight:600}
.button:focus-visible,input:focus-visible{outline:3px solid var(--fg);outline-offset:2px}
label{display:block;font-size:.9rem;color:var(--muted)}input{width:100%;margin-top:4px;padding:8px;border:1px solid var(--line);border-radius:6px;background:var(--bg);color:var(--fg);font:inherit;font-size:.85rem}`;

export interface PageInput {
  clientId: string;
  title: string;
  baseUrl: string;
  usage: ClientUsage;
  /** How many sessions the feed carries now (0: an empty state explains why nothing connects). */
  usable: number;
  now: number;
  /** The owner's announcement (plain text), shown first; null: none. */
  announce?: string | null;
  /** The owner's support link ("Get help"); null: none. */
  supportUrl?: string | null;
}

/** The owner's announcement and support link, escaped (the announcement keeps its line breaks). */
function ownerSection(p: PageInput): string {
  const note = p.announce ? `<section class="announce" role="note" aria-label="Announcement"><p>${esc(p.announce)}</p></section>` : '';
  const help = p.supportUrl ? `<p><a class="button" href="${esc(p.supportUrl)}" rel="noopener noreferrer">Get help</a></p>` : '';
  return note + help;
}

export async function subscriptionPage(p: PageInput): Promise<string> {
  const empty = p.usable === 0 ? '<section class="warn" role="status">No connection can carry traffic right now: every session is ended or paused. Ask whoever gave you this page to create or resume one; your app picks it up at its next update.</section>' : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer"><meta name="robots" content="noindex">
<title>${esc(p.title)}</title><style>${STYLE}</style></head>
<body><main><h1>${esc(p.title)}</h1>${ownerSection(p)}<p class="muted">Your personal subscription: keep this address private. It lists ${p.usable} connection${p.usable === 1 ? '' : 's'}.</p>
${empty}${usageSection(p.usage, p.now)}${await appSection({ url: p.baseUrl, format_urls: { 'sing-box': `${p.baseUrl}?format=sing-box`, clash: `${p.baseUrl}?format=clash` } }, p.title)}</main></body></html>`;
}
