// keccak256 in WebAssembly (hash-wasm) for the settle path's hashes: a payment's payload hash, a relayer
// transaction's signing hash and its hash. viem's keccak256 is JavaScript (noble): here ~53 µs for 500 bytes and
// ~710 µs for a 7 KB batch transaction, against ~3 and ~29 µs in WebAssembly. The module compiles
// asynchronously at load; until it is ready (the first milliseconds of a process) viem's keccak256 answers, and
// the answer is the same either way.
import { createKeccak, type IHasher } from 'hash-wasm';
import { keccak256 as keccak256Js, toBytes, type Hex } from 'viem';

let hasher: IHasher | undefined;
/** Resolves once the WebAssembly hasher is in use (tests and benchmarks wait for it). */
export const keccakReady: Promise<void> = createKeccak(256).then((h) => {
  hasher = h;
});

/** keccak256 of bytes, or of hex (`0x…`). */
export function keccak256(data: Uint8Array | Hex): Hex {
  const bytes = typeof data === 'string' ? Buffer.from(data.slice(2), 'hex') : data;
  // Buffer.from stops at the first character that is not hex: viem's keccak256 says what such input means.
  if (!hasher || (typeof data === 'string' && bytes.length * 2 !== data.length - 2)) return keccak256Js(data);
  hasher.init();
  hasher.update(bytes);
  return `0x${hasher.digest('hex')}`;
}

/** keccak256 of a text's UTF-8 bytes (viem's `keccak256(toBytes(text))`). */
export function keccak256Text(text: string): Hex {
  if (!hasher) return keccak256Js(toBytes(text));
  hasher.init();
  hasher.update(text);
  return `0x${hasher.digest('hex')}`;
}
