// The proxy's answers on their own (proxy-answer.ts): the geo check against the zone catalogue
// with the country's cities, the error answer's headers (Proxy-Status, X-Proxy-Error), and which
// code a refusal and a failed dial answer with.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { checkGeo, citiesIn, dialFailure, errorResponse, refusalCode, sfString } from '../../server/dataplane/proxy-answer.ts';
import { EgressRefused } from '../../server/dataplane/egress.ts';
import { ZONES } from './helpers/memory-deps.ts';

describe('proxy answers', () => {
  test('geo check against the zone catalogue, naming the country\'s cities', () => {
    assert.equal(checkGeo(ZONES), undefined);
    assert.equal(checkGeo(ZONES, 'DE'), undefined);
    assert.equal(checkGeo(ZONES, 'US', 'new.york'), undefined);
    assert.match(checkGeo(ZONES, 'FR')?.message ?? '', /FR/);
    const berlin = checkGeo(ZONES, 'DE', 'berlin');
    assert.match(berlin?.message ?? '', /city berlin is not available in DE; available: frankfurt$/);
    assert.deepEqual(berlin?.details, { country: 'DE', city: 'berlin', available_cities: ['frankfurt'] });
    assert.deepEqual(citiesIn(ZONES, 'US'), ['new.york', 'newark']);
  });
  test('an error answer: status, JSON record, Proxy-Status and X-Proxy-Error', () => {
    const text = errorResponse('location_unavailable', 'city "x" \\ gone é', { details: { a: 1 } }).toString('utf8');
    const [head, body] = text.split('\r\n\r\n');
    const lines = head.split('\r\n');
    assert.equal(lines[0], 'HTTP/1.1 412 Precondition Failed');
    assert.ok(lines.includes('Proxy-Status: vpn-access; error=destination_unavailable; details="city \\"x\\" \\\\ gone ?"'), head);
    assert.ok(lines.includes('X-Proxy-Error: location_unavailable'));
    assert.ok(lines.includes('Connection: close'));
    assert.deepEqual(JSON.parse(body), { error: { code: 'location_unavailable', message: 'city "x" \\ gone é', details: { a: 1 } } });
    assert.ok(lines.includes(`Content-Length: ${Buffer.byteLength(body)}`), head);
    assert.match(errorResponse('bad_gateway', 'm', { proxyError: 'connection_refused' }).toString(), /Proxy-Status: vpn-access; error=connection_refused; details="m"/);
    assert.equal(sfString('a"b'), '"a\\"b"');
  });
  test('refusals and failed dials map to their codes', () => {
    assert.equal(refusalCode('paused'), 'session_paused');
    for (const r of ['session_cap', 'client_cap', 'global_cap'] as const) assert.equal(refusalCode(r), 'over_cap');
    assert.equal(refusalCode('expired'), 'session_expired');
    assert.equal(refusalCode('client_expired'), 'session_expired');
    assert.equal(refusalCode('client_disabled'), 'client_disabled');
    assert.equal(refusalCode('max_sessions'), 'max_sessions');
    assert.equal(refusalCode('too_many_connections'), 'connection_limit');
    assert.equal(refusalCode('connection_rate'), 'connection_limit');
    assert.equal(refusalCode('unavailable'), 'proxy_unavailable');
    assert.equal(refusalCode('ended'), 'session_refused');
    const errno = (code: string) => Object.assign(new Error(code), { code });
    assert.deepEqual(dialFailure(new EgressRefused('x'), 'h', 1).code, 'destination_forbidden');
    assert.equal(dialFailure(errno('ECONNREFUSED'), 'h', 1).proxyError, 'connection_refused');
    assert.equal(dialFailure(errno('ENOTFOUND'), 'h', 1).proxyError, 'destination_not_found');
    assert.equal(dialFailure(new Error('connect timeout'), 'h', 1).code, 'gateway_timeout');
    assert.equal(dialFailure(new Error('DNS lookup of h timed out after 5 ms'), 'h', 1).proxyError, 'dns_timeout');
    assert.equal(dialFailure(new Error('the relay at node n closed'), 'h', 1).code, 'bad_gateway');
  });
});
