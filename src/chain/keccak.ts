// keccak256 in WebAssembly (hash-wasm) for the settle path's hashes: a payment's payload hash, a relayer
// transaction's signing hash and its hash. viem's keccak256 is JavaScript (noble): here ~53 µs for 500 bytes and
// ~710 µs for a 7 KB batch transaction, against ~3 and ~29 µs in WebAssembly. The module compiles
// asynchronously at load; until it is ready (the first milliseconds of a process) viem's keccak256 answers, and
// the answer is the same either way.
import { createKeccak, type IHasher } from 'hash-wasm';
import { keccak256 as keccak256Js, stringToBytes, type Hex } from 'viem';

let hasher: IHasher | undefined;
/** Resolves once the WebAssembly hasher is in use (tests wait for it); where WebAssembly cannot load, viem's stays. */
export const keccakReady: Promise<void> = createKeccak(256).then(
  (h) => void (hasher = h),
  () => undefined,
);

/** keccak256 of bytes, or of hex (`0x…`). */
export function keccak256(data: Uint8Array | Hex): Hex {
  if (typeof data !== 'string') return hashed(data) ?? keccak256Js(data);
  const bytes = Buffer.from(data.slice(2), 'hex');
  // Buffer.from stops at the first character that is not hex: viem's keccak256 says what such input means.
  const plainHex = data.startsWith('0x') && bytes.length * 2 === data.length - 2;
  return (plainHex && hashed(bytes)) || keccak256Js(data);
}

/** keccak256 of a text's UTF-8 bytes (viem's `keccak256(stringToBytes(text))`; its toBytes reads a text like `0xab` as hex). */
export function keccak256Text(text: string): Hex {
  return hashed(text) ?? keccak256Js(stringToBytes(text));
}

// Synchronous from init to digest: no other call can interleave on the one hasher.
function hashed(data: Uint8Array | string): Hex | undefined {
  if (!hasher) return undefined;
  hasher.init();
  hasher.update(data);
  return `0x${hasher.digest('hex')}`;
}
