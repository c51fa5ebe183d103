import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../platform/http/errors.js';
import { storageErrors } from './errors.js';
import { STORAGE_LIMITS } from './schemas.js';

export interface UploadedFile {
  bytes: Buffer;
  /** The part's Content-Type as sent (the image is judged by its content; this only has to agree). */
  declaredType: string | null;
}

/**
 * The upload body: exactly one part, a file named `file`. The whole request is bounded by its
 * Content-Length before a byte is read (a request without one is refused: the limit could not be
 * enforced up front); the file by busboy's own limit while streaming. Any other field or a second
 * file is a 400, seen before its bytes are read.
 */
export async function readSingleFile(request: FastifyRequest): Promise<UploadedFile> {
  const length = Number(request.headers['content-length']);
  if (!Number.isFinite(length) || request.headers['content-length'] === undefined) {
    throw storageErrors.invalidFile('Content-Length is required: send the multipart body with a known length');
  }
  if (length > STORAGE_LIMITS.maxRequestBytes) throw storageErrors.tooLarge(`The multipart request must be at most ${STORAGE_LIMITS.maxRequestBytes} bytes`);
  if (!request.isMultipart()) throw storageErrors.invalidFile('The body must be multipart/form-data with one file field named "file"');

  let file: UploadedFile | null = null;
  try {
    for await (const part of request.parts({ limits: { fileSize: STORAGE_LIMITS.maxFileBytes, files: 2, fields: 1, parts: 2, headerPairs: 20 } })) {
      if (part.type !== 'file') throw storageErrors.invalidFile(`Unexpected field "${part.fieldname}": send only the file field "file"`);
      if (part.fieldname !== 'file') throw storageErrors.invalidFile(`Unexpected file field "${part.fieldname}": the field must be named "file"`);
      if (file) throw storageErrors.invalidFile('Send exactly one file');
      const bytes = await part.toBuffer();
      file = { bytes, declaredType: part.mimetype || null };
    }
  } catch (error) {
    throw asUploadError(error);
  }
  if (!file) throw storageErrors.invalidFile('The file field "file" is missing');
  return file;
}

function asUploadError(error: unknown): unknown {
  if (error instanceof ApiError) return error;
  const code = (error as { code?: string }).code;
  if (code === 'FST_REQ_FILE_TOO_LARGE') return storageErrors.tooLarge(`The file must be at most ${STORAGE_LIMITS.maxFileBytes} bytes`);
  if (code === 'FST_FILES_LIMIT' || code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT') {
    return storageErrors.invalidFile('Send exactly one part: the file field "file"');
  }
  // busboy's refusals of a malformed body (bad boundary, truncated part).
  if (error instanceof Error && /multipart|boundary|unexpected end/i.test(error.message)) return storageErrors.invalidFile(`Malformed multipart body: ${error.message}`);
  return error;
}
