import { Readable } from 'node:stream';
import { z } from 'zod';
import { directErrorSchema } from '../../platform/http/schemas.js';
import { ApiError } from '../../platform/http/errors.js';
import type { ZodApp } from '../module.js';
import type { ImageStore } from './image-store.js';
import type { StorageStore } from './store.js';

// CIDv1 in base32 as this service issues them (raw or dag-pb, sha2-256): anything else is not ours.
const CID = /^b[a-z2-7]{58,100}$/;
const image = z.any().describe('the image bytes');

/**
 * The assets origin: `GET /ipfs/<cid>` serves an image while some order keeps it (fulfilled and within
 * retention, by the database's clock). Content addressed, so cached as immutable; served with its
 * stored media type, nosniff and a CSP that lets nothing run even if a browser navigates to it.
 */
export function gatewayRoutes(store: StorageStore, images: ImageStore) {
  return (app: ZodApp) => {
    app.get(
      '/ipfs/:cid',
      {
        schema: {
          tags: ['storage'],
          summary: 'A stored image by CID (range requests supported)',
          params: z.object({ cid: z.string().max(128) }),
          response: { 200: image, 206: image, 304: z.null(), 404: directErrorSchema, 416: directErrorSchema },
        },
      },
      async (request, reply) => {
        const { cid } = request.params;
        const image = CID.test(cid) ? await store.servedImage(cid) : undefined;
        if (!image) throw new ApiError(404, 'not_found', 'No stored image with this CID');
        const etag = `"${cid}"`;
        reply.headers({
          'content-type': image.mediaType,
          etag,
          'cache-control': 'public, max-age=31536000, immutable',
          'accept-ranges': 'bytes',
          'x-content-type-options': 'nosniff',
          'content-security-policy': "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox",
          'cross-origin-resource-policy': 'cross-origin',
        });
        if (matchesEtag(request.headers['if-none-match'], etag)) return reply.code(304).send(null);
        const range = parseRange(request.headers.range, image.fileBytes);
        if (range === 'unsatisfiable') {
          throw new ApiError(416, 'range_not_satisfiable', `The image has ${image.fileBytes} bytes`, undefined, { 'content-range': `bytes */${image.fileBytes}` });
        }
        const { offset, length } = range ?? { offset: 0, length: image.fileBytes };
        if (range) reply.code(206).header('content-range', `bytes ${offset}-${offset + length - 1}/${image.fileBytes}`);
        reply.header('content-length', String(length));
        return reply.send(Readable.from(images.read(cid, { offset, length })));
      },
    );
  };
}

/** If-None-Match as caches send it: `*`, a list, weak validators (W/"…") compared weakly. */
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const value = tag.trim();
    return value === '*' || value.replace(/^W\//, '') === etag;
  });
}

/** One `bytes=` range (the only kind image clients send); null for none or one we ignore (serve all). */
export function parseRange(header: string | undefined, size: number): { offset: number; length: number } | 'unsatisfiable' | null {
  if (!header) return null;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return null;
  const [, first, last] = match;
  if (first === '') {
    // A suffix: the last N bytes.
    const suffix = Number(last);
    if (suffix === 0) return 'unsatisfiable';
    const length = Math.min(suffix, size);
    return { offset: size - length, length };
  }
  const start = Number(first);
  if (start >= size) return 'unsatisfiable';
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (end < start) return null;
  return { offset: start, length: end - start + 1 };
}
