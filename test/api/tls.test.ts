// TLS mode in the API: auto turns TLS on for a public host (self-signed certificate, pinned in
// links) and leaves loopback and private hosts plain; server-info and the OpenAPI document say so.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createSession, makeServer } from '../helpers/server.ts';

async function serverInfo(t: Awaited<ReturnType<typeof makeServer>>) {
  const r = await t.app.inject({ method: 'GET', url: '/v2/server-info', headers: { authorization: `Bearer ${t.owner}` } });
  assert.equal(r.statusCode, 200, r.body);
  return r.json();
}

describe('TLS mode', () => {
  test('auto with a public address: TLS with a self-signed certificate for it, pinned by pcs', async () => {
    const t = await makeServer({ publicHost: '203.0.113.7', publicPort: 443 });
    try {
      const info = await serverInfo(t);
      assert.equal(info.tls, true);
      assert.equal(info.tls_status.mode, 'auto');
      assert.equal(info.tls_status.enabled, true);
      assert.equal(info.tls_status.source, 'self-signed');
      assert.equal(info.tls_status.self_signed, true);
      assert.match(info.tls_status.reason, /203\.0\.113\.7 is public/);
      assert.match(info.tls_status.fingerprint_sha256, /^[0-9a-f]{64}$/);
      assert.deepEqual(info.tls_status.names, ['203.0.113.7']);
      assert.ok(Date.parse(info.tls_status.not_after) > Date.now() + 365 * 86_400_000);
      const b = await createSession(t.app, t.owner, { client_id: 'far' });
      const u = new URL(b.configuration_link);
      assert.equal(u.search, `?encryption=none&security=tls&type=ws&path=%2Fvless&sni=203.0.113.7&fp=chrome&alpn=http%2F1.1&pcs=${info.tls_status.fingerprint_sha256}`);
      assert.equal(b.configuration.security, 'tls');
      assert.equal(b.configuration.pcs, info.tls_status.fingerprint_sha256);
      assert.equal(b.configuration.alpn, 'http/1.1');
      assert.equal(b.configuration.fp, 'chrome');
      assert.equal(b.configuration.sni, '203.0.113.7');
    } finally {
      await t.close();
    }
  });

  test('auto with a public name: the name in sni and the certificate; an sni that differs brings vcn', async () => {
    const t = await makeServer({ publicHost: 'vpn.example.com' });
    try {
      const info = await serverInfo(t);
      assert.deepEqual(info.tls_status.names, ['vpn.example.com']);
      const p = new URL((await createSession(t.app, t.owner, { client_id: 'named' })).configuration_link).searchParams;
      assert.equal(p.get('sni'), 'vpn.example.com');
      assert.equal(p.get('vcn'), null);
      // The same certificate, links asking for another sni: the name to verify is given apart.
      t.services.settings.link.sni = 'front.example.net';
      const { applyTlsToLink } = await import('../../server/tls/index.ts');
      applyTlsToLink(t.services.settings.link, t.services.tls);
      const q = new URL((await createSession(t.app, t.owner, { client_id: 'named' })).configuration_link).searchParams;
      assert.equal(q.get('sni'), 'front.example.net');
      assert.equal(q.get('vcn'), 'vpn.example.com');
    } finally {
      await t.close();
    }
  });

  test('auto with loopback, 10.x and 192.168.x: plain links exactly as before', async () => {
    for (const publicHost of ['127.0.0.1', '10.1.2.3', '192.168.1.20']) {
      const t = await makeServer({ publicHost });
      try {
        const info = await serverInfo(t);
        assert.equal(info.tls, false, publicHost);
        assert.equal(info.tls_status.enabled, false);
        assert.equal(info.tls_status.source, null);
        assert.equal(info.tls_status.fingerprint_sha256, null);
        assert.match(info.tls_status.reason, /loopback, private or link-local/);
        const b = await createSession(t.app, t.owner, { client_id: 'near' });
        assert.equal(new URL(b.configuration_link).search, '?encryption=none&security=none&type=ws&path=%2Fvless');
        assert.deepEqual(Object.keys(b.configuration).sort(), ['address', 'encryption', 'id', 'network', 'path', 'port', 'protocol', 'security']);
      } finally {
        await t.close();
      }
    }
  });

  test('off keeps a public host plain; on turns loopback to TLS', async () => {
    const off = await makeServer({ publicHost: '203.0.113.7', tlsMode: 'off' });
    try {
      const info = await serverInfo(off);
      assert.equal(info.tls_status.enabled, false);
      assert.equal(info.tls_status.mode, 'off');
      assert.equal(new URL((await createSession(off.app, off.owner, { client_id: 'x' })).configuration_link).searchParams.get('security'), 'none');
    } finally {
      await off.close();
    }
    const on = await makeServer({ publicHost: '127.0.0.1', tlsMode: 'on' });
    try {
      const info = await serverInfo(on);
      assert.equal(info.tls_status.enabled, true);
      assert.equal(info.tls_status.mode, 'on');
      assert.deepEqual(info.tls_status.names, ['127.0.0.1']);
    } finally {
      await on.close();
    }
  });

  test('OpenAPI marks tls_status and the configuration\'s TLS fields as extensions', async () => {
    const t = await makeServer();
    try {
      const doc = (await t.app.inject({ method: 'GET', url: '/v2/openapi.json' })).json();
      const text = JSON.stringify(doc);
      assert.ok(text.includes('"tls_status"'));
      const find = (o: unknown, key: string): Record<string, unknown> | undefined => {
        if (!o || typeof o !== 'object') return undefined;
        const rec = o as Record<string, unknown>;
        const props = rec.properties as Record<string, Record<string, unknown>> | undefined;
        if (props?.[key]) return props[key];
        for (const v of Object.values(rec)) {
          const f = find(v, key);
          if (f) return f;
        }
        return undefined;
      };
      for (const key of ['tls_status', 'pcs', 'vcn', 'fp', 'alpn']) assert.equal(find(doc, key)?.['x-extension'], true, key);
    } finally {
      await t.close();
    }
  });
});
