import { Challenge } from 'mppx';
import { Types } from 'mppx/evm';
import { z } from 'zod';

/**
 * mppx's wire schemas with their object levels rebuilt by zod proper: the same fields with mppx's own
 * field schemas (so its checks and messages, and any field a new mppx adds), but objects that zod
 * compiles. mppx builds them with zod/mini, whose objects are interpreted: the three parses were a
 * tenth of a validate's parsing cost, a fifth of that compiled. schemas.test.ts holds each to mppx's
 * answer on good and bad input.
 */

export const ChallengeSchema = z.object(Challenge.Schema.def.shape);

/** A charge request (the common case: no splits; methodDetails.splits keeps mppx's schema). */
export const ChargeRequestSchema = z.object({
  ...Types.ChargeRequestSchema.def.shape,
  methodDetails: z.object(Types.MethodDetailsSchema.def.shape),
});

export const AuthorizationPayloadSchema = z.object(Types.AuthorizationPayloadSchema.def.shape);
