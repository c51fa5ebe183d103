import { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';

// The request metrics are recorded when an answer has gone out, by Fastify's LogController (`requestCompleted`,
// which Fastify calls from its own response listener on every request it set one up for) rather than by an
// onResponse hook on every route: a hook phase costs a hook runner (three closures) per request, and Fastify
// sets up the listener anyway because it has a logger. The route's recorder travels on the request: its
// onRequest work (route-hooks.ts) puts it there.

/** Counts one answered request: its method, status and latency in milliseconds (`reply.elapsedTime`). */
export type AnswerRecorder = (method: string, status: number, milliseconds: number) => void;

const RECORDER = Symbol('tollgate.answerRecorder');
type Carrier = { [RECORDER]: AnswerRecorder | null };

/** Makes room for the recorder on every request of `app` (one field, set once per request). */
export function decorateAnswerRecorder(app: FastifyInstance): void {
  app.decorateRequest(RECORDER, null);
}

/** Names the recorder that counts `request`'s answer. */
export function recordAnswerWith(request: FastifyRequest, record: AnswerRecorder): void {
  (request as unknown as Carrier)[RECORDER] = record;
}

/** Fastify's LogController that also records each answered request with its route's recorder, if it was given one. */
export class MeteredLogController extends LogController {
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    (request as unknown as Carrier)[RECORDER]?.(request.method, reply.statusCode, reply.elapsedTime);
    super.requestCompleted(error, request, reply, metadata);
  }
}
