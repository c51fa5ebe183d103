import { describe, expect, it } from 'vitest';
import { classifyAddress, isPublicAddress } from './ip-policy.js';

describe('classifyAddress', () => {
  it.each([
    // IPv4
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.1.1', 'link_local'],
    ['169.254.169.254', 'metadata'],
    ['169.254.170.2', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['168.63.129.16', 'metadata'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['198.18.0.1', 'benchmark'],
    ['198.19.255.255', 'benchmark'],
    // IPv6
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['fe80::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['febf::1', 'link_local'],
    ['fc00::1', 'unique_local'],
    ['fd12:3456::1', 'unique_local'],
    ['fd00:ec2::254', 'metadata'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['3fff::1', 'documentation'],
    ['2001:2::1', 'benchmark'],
    ['2001:0:4136:e378::1', 'reserved'], // Teredo
    ['100::1', 'reserved'],
    ['fec0::1', 'reserved'], // deprecated site-local
    ['64:ff9b:1::a00:1', 'reserved'],
    // IPv6 embedding IPv4
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::FFFF:7F00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    ['::127.0.0.1', 'loopback'], // IPv4-compatible
    ['::a00:1', 'private'], // IPv4-compatible, hex
    ['64:ff9b::10.0.0.1', 'private'], // NAT64
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['2002:a00:1::1', 'private'], // 6to4 of 10.0.0.1
    ['2002:c0a8:101::', 'private'], // 6to4 of 192.168.1.1
  ])('%s is %s', (ip, cls) => {
    expect(classifyAddress(ip)).toBe(cls);
    expect(isPublicAddress(ip)).toBe(false);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.15.255.255', // just below 172.16/12
    '172.32.0.1', // just above
    '100.63.255.255', // just below CGNAT
    '100.128.0.1', // just above
    '169.253.255.255',
    '192.169.0.1',
    '198.17.255.255',
    '198.20.0.1',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2001:4860:4860::8888',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '::ffff:808:808',
    '64:ff9b::8.8.8.8',
    '2002:808:808::1', // 6to4 of 8.8.8.8
  ])('%s is public', (ip) => {
    expect(classifyAddress(ip)).toBe('public');
    expect(isPublicAddress(ip)).toBe(true);
  });

  it.each(['', 'localhost', 'example.com', '256.0.0.1', '127.1', '2130706433', '::ffff:127.0.0.1.1', '1::2::3'])(
    '%j is invalid (not an IP literal)',
    (ip) => {
      expect(classifyAddress(ip)).toBe('invalid');
      expect(isPublicAddress(ip)).toBe(false);
    },
  );
});
