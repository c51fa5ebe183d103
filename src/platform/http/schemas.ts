import { z } from 'zod';

/** Response schema of the envelope family around a data schema. */
export const envelopeSchema = <T extends z.ZodType>(data: T) =>
  z.object({ code: z.number().int(), message: z.string(), data });

/** Error schemas, for documenting responses in OpenAPI. */
export const envelopeErrorSchema = z.object({ code: z.number().int(), message: z.string(), data: z.unknown() });
/** `response` entries for the envelope errors a route answers, e.g. `...envelopeErrors(400, 401)`. */
export const envelopeErrors = (...statuses: number[]) => Object.fromEntries(statuses.map((status) => [status, envelopeErrorSchema]));
export const intentErrorSchema = z.object({ code: z.string(), message: z.string(), details: z.unknown().optional() });
export const directErrorSchema = z.object({
  error: z.object({ code: z.string(), message: z.string(), details: z.unknown().optional() }),
});

export const isoDate = (date: Date | null): string | null => (date ? date.toISOString() : null);
