/**
 * The origin and host rules of src/http/origin-guard.ts (README "Browsers and origins"), as tables.
 * The same rules over real HTTP are in test/integration/origins.test.ts.
 */
import os from 'node:os';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hostAllowed, hostName, hostRule, originAllowed, originRule } from '../../src/http/origin-guard.js';

test('the origin rule: CORS_ORIGINS when set, all origins with tokens, loopback origins without', () => {
  assert.deepEqual(originRule([], true), { kind: 'all' });
  assert.deepEqual(originRule([], false), { kind: 'loopback' });
  assert.deepEqual(originRule(['*'], false), { kind: 'all' });
  assert.deepEqual(originRule(['http://a.test', '*'], false), { kind: 'all' });
  const list = originRule([' HTTP://Allowed.test/ ', 'https://b.test:8443'], false);
  assert.equal(list.kind, 'list');
  assert.ok(originAllowed(list, 'http://allowed.test'), 'listed origins compare as browsers write them');
  assert.ok(originAllowed(list, 'https://b.test:8443'));
  assert.ok(!originAllowed(list, 'https://b.test'), 'the port is part of the origin');
  assert.ok(!originAllowed(list, 'http://localhost:3000'), 'a list is exact: loopback is not added to it');
});

test('loopback origins: localhost, 127.0.0.1 and [::1] on any port, over http or https, and nothing that merely starts like them', () => {
  const rule = originRule([], false);
  for (const ok of ['http://localhost', 'http://localhost:5173', 'https://127.0.0.1:8443', 'http://[::1]:3000', 'HTTP://LOCALHOST:1']) {
    assert.ok(originAllowed(rule, ok), ok);
  }
  for (const bad of [
    'http://evil.test',
    'null',
    'http://localhost.evil.test',
    'http://127.0.0.1.nip.io',
    'http://127.0.0.1:3000.evil.test',
    'http://localhost@evil.test',
    'file://',
    'http://127.0.0.2',
    'ftp://localhost',
  ]) {
    assert.ok(!originAllowed(rule, bad), bad);
  }
});

test('host names: port, brackets, case and a trailing dot do not matter', () => {
  assert.equal(hostName('127.0.0.1:3000'), '127.0.0.1');
  assert.equal(hostName('[::1]:3000'), '::1');
  assert.equal(hostName('[::1]'), '::1');
  assert.equal(hostName('::'), '::');
  assert.equal(hostName('LocalHost.:80'), 'localhost');
});

test('the Host rule: off with tokens unless ALLOWED_HOSTS; IP literals, loopback names, the bound name and ALLOWED_HOSTS pass; other names do not', () => {
  assert.equal(hostRule({ tokensEnabled: true, allowedHosts: [], bindHost: '127.0.0.1' }), null);
  const quick = hostRule({ tokensEnabled: false, allowedHosts: [], bindHost: '127.0.0.1' })!;
  for (const ok of ['127.0.0.1:3000', 'localhost:3000', 'localhost', '[::1]:3000', '10.1.2.3:3000', '[fe80::1]:80', 'LOCALHOST.:3000']) {
    assert.ok(hostAllowed(quick, ok), ok);
  }
  // DNS rebinding names: a domain the attacker controls, pointed at 127.0.0.1.
  for (const bad of ['attacker.example', 'attacker.example:3000', '127.0.0.1.nip.io:3000', 'localhost.attacker.example', 'x', '127.0.0.1:abc', 'evil@127.0.0.1']) {
    assert.ok(!hostAllowed(quick, bad), bad);
  }
  const listed = hostRule({ tokensEnabled: true, allowedHosts: ['weft.lan'], bindHost: '127.0.0.1' })!;
  assert.ok(hostAllowed(listed, 'weft.lan:3000'));
  assert.ok(hostAllowed(listed, 'WEFT.LAN'));
  assert.ok(!hostAllowed(listed, 'sub.weft.lan'), 'a listed name does not cover its subdomains');
  assert.ok(!hostAllowed(listed, 'attacker.example'));
  const named = hostRule({ tokensEnabled: false, allowedHosts: [], bindHost: 'build-box.lan' })!;
  assert.ok(hostAllowed(named, 'build-box.lan:3000'), 'the name HOST binds is the server’s own');
  assert.ok(!hostAllowed(named, os.hostname() === 'build-box' ? 'nothing.example' : os.hostname()), 'the machine name only on a wildcard bind');
});

test('on a wildcard bind without tokens, the machine’s own name (full and short) passes as well', () => {
  const self = os.hostname().toLowerCase();
  for (const bindHost of ['0.0.0.0', '::']) {
    const rule = hostRule({ tokensEnabled: false, allowedHosts: [], bindHost })!;
    assert.ok(hostAllowed(rule, `${self}:3000`), `${self} on ${bindHost}`);
    assert.ok(hostAllowed(rule, `${self.split('.')[0]}:3000`));
    assert.ok(hostAllowed(rule, '192.168.1.20:3000'), 'its addresses, as any IP literal');
    assert.ok(!hostAllowed(rule, 'attacker.example:3000'));
  }
});
