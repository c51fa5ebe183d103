import { encodeAbiParameters, encodeEventTopics, getAddress, parseAbi, type Address, type Hex, type Log } from 'viem';
import { describe, expect, it } from 'vitest';
import { pairPaymentLogs } from '../../src/chain/indexer/pair-logs.js';

const abi = parseAbi([
  'event Transfer(address indexed from, address indexed to, uint256 value)',
  'event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)',
  'event AuthorizationAlreadyUsed(address indexed authorizer, bytes32 indexed nonce)',
]);
const TOKEN = getAddress('0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168');
const OTHER_TOKEN = getAddress('0x1111111111111111111111111111111111111111');
const ALICE = getAddress('0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa');
const BOB = getAddress('0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb');
const N1 = `0x${'01'.repeat(32)}` as Hex;
const N2 = `0x${'02'.repeat(32)}` as Hex;
const tokens = new Set([TOKEN.toLowerCase()]);

let index = 0;
function log(address: Address, topics: Hex[], data: Hex = '0x'): Log {
  return { address, topics: topics as [Hex, ...Hex[]], data, logIndex: index++, removed: false } as unknown as Log;
}
const used = (who: Address, nonce: Hex, address = TOKEN) =>
  log(address, encodeEventTopics({ abi, eventName: 'AuthorizationUsed', args: { authorizer: who, nonce } }) as Hex[]);
const alreadyUsed = (who: Address, nonce: Hex) =>
  log(TOKEN, encodeEventTopics({ abi, eventName: 'AuthorizationAlreadyUsed', args: { authorizer: who, nonce } }) as Hex[]);
const transfer = (from: Address, to: Address, value: bigint, address = TOKEN) =>
  log(address, encodeEventTopics({ abi, eventName: 'Transfer', args: { from, to } }) as Hex[], encodeAbiParameters([{ type: 'uint256' }], [value]));

describe('pairPaymentLogs', () => {
  it('pairs AuthorizationUsed with the Transfer that follows it', () => {
    const logs = [used(ALICE, N1), transfer(ALICE, BOB, 5n)];
    expect(pairPaymentLogs(logs, tokens)).toEqual([
      { token: TOKEN, payer: ALICE, recipient: BOB, value: 5n, nonce: N1, logIndex: logs[1].logIndex },
    ]);
  });

  it('ignores a Transfer next to AuthorizationAlreadyUsed (a replayed nonce) and bare Transfers', () => {
    expect(pairPaymentLogs([alreadyUsed(ALICE, N1), transfer(ALICE, BOB, 5n), transfer(BOB, ALICE, 1n)], tokens)).toEqual([]);
  });

  it('ignores another token and a Transfer from someone other than the authorizer', () => {
    expect(pairPaymentLogs([used(ALICE, N1, OTHER_TOKEN), transfer(ALICE, BOB, 5n, OTHER_TOKEN)], tokens)).toEqual([]);
    expect(pairPaymentLogs([used(ALICE, N1), transfer(BOB, ALICE, 5n)], tokens)).toEqual([]);
  });

  it('pairs several authorizations in one transaction in order', () => {
    const payments = pairPaymentLogs([used(ALICE, N1), transfer(ALICE, BOB, 1n), used(ALICE, N2), transfer(ALICE, BOB, 2n)], tokens);
    expect(payments.map((p) => [p.nonce, p.value])).toEqual([
      [N1, 1n],
      [N2, 2n],
    ]);
  });

  it('pairs each burned nonce with its own 1-unit transfer, not with the priced transfer beside it (a Multicall3 burn)', () => {
    const payments = pairPaymentLogs([used(ALICE, N1), transfer(ALICE, ALICE, 1n), used(ALICE, N2), transfer(ALICE, BOB, 100n)], tokens);
    expect(payments.map((p) => [p.nonce, p.recipient, p.value])).toEqual([
      [N1, ALICE, 1n],
      [N2, BOB, 100n],
    ]);
  });

  it('pairs only the log right after AuthorizationUsed: a later Transfer of the authorizer is not its payment', () => {
    expect(pairPaymentLogs([used(ALICE, N1), log(OTHER_TOKEN, []), transfer(ALICE, BOB, 5n)], tokens)).toEqual([]);
    expect(pairPaymentLogs([used(ALICE, N1), used(ALICE, N2), transfer(ALICE, BOB, 5n)], tokens).map((p) => p.nonce)).toEqual([N2]);
  });

  it('pairs only logs that decode as the two events: a Transfer without its value word, or with a topic missing, is not a payment', () => {
    const [sig, from, to] = encodeEventTopics({ abi, eventName: 'Transfer', args: { from: ALICE, to: BOB } }) as Hex[];
    const [usedSig, who] = encodeEventTopics({ abi, eventName: 'AuthorizationUsed', args: { authorizer: ALICE, nonce: N1 } }) as Hex[];
    const word = encodeAbiParameters([{ type: 'uint256' }], [5n]);
    // An ERC-721 style Transfer: the third value indexed, no data.
    expect(pairPaymentLogs([used(ALICE, N1), log(TOKEN, [sig!, from!, to!, word])], tokens)).toEqual([]);
    expect(pairPaymentLogs([used(ALICE, N1), log(TOKEN, [sig!, from!, to!], '0x05')], tokens)).toEqual([]);
    expect(pairPaymentLogs([used(ALICE, N1), log(TOKEN, [sig!, from!], word)], tokens)).toEqual([]);
    expect(pairPaymentLogs([log(TOKEN, [usedSig!, who!]), transfer(ALICE, BOB, 5n)], tokens)).toEqual([]);
    // A longer data field still holds the value in its first word.
    expect(pairPaymentLogs([used(ALICE, N1), log(TOKEN, [sig!, from!, to!], `${word}${'00'.repeat(32)}`)], tokens).map((p) => p.value)).toEqual([5n]);
  });
});
