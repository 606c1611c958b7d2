import type { FastifyInstance } from 'fastify';
import { ApiError } from '../contract/errors.ts';
import { ErrorRecord, EventStreamQuery, SessionEvent } from '../contract/schemas.ts';
import { errorFrame, openEventStream } from '../events/sse.ts';
import { callerOf } from '../plugins/auth.ts';
import type { ErrorWriter } from '../plugins/errors.ts';
import type { Services } from '../services.ts';
import { bearer } from './common.ts';
import { redactIds } from '../time.ts';

const asList = (v: string | string[] | undefined): string[] | undefined => (v === undefined ? undefined : Array.isArray(v) ? v : [v]);

/** Errors on the event stream: the record as the data: of one SSE event, then the stream closes. */
const writeSseError: ErrorWriter = (reply, error) =>
  reply.code(error.statusCode).type('text/event-stream; charset=utf-8').send(errorFrame(error.toBody()));

export async function eventRoutes(app: FastifyInstance, ctx: Services): Promise<void> {
  app.get<{ Querystring: EventStreamQuery }>('/sessions/events', {
    config: { writeError: writeSseError },
    schema: {
      summary: 'Stream of session events (Server-Sent Events)',
      description:
        'Each event is `id: <id>` and `data: <SessionEvent JSON>`. Resume with the Last-Event-ID header or last_event_id (extension); without either, every stored event is replayed first, or only the `tail` newest (extension). Filter with session_id and event_type (extensions, repeatable).',
      tags: ['events'],
      security: bearer,
      querystring: EventStreamQuery,
      response: {
        200: { description: 'text/event-stream of SessionEvent', content: { 'text/event-stream': { schema: SessionEvent } } },
        ...Object.fromEntries(
          ([400, 401, 429, 500] as const).map((status) => [
            status,
            { description: 'The error record as the data: of one event, then the stream closes.', content: { 'text/event-stream': { schema: ErrorRecord } } },
          ]),
        ),
      },
    } as object,
    handler: async (request, reply) => {
      const { customerId, tokenId } = callerOf(request);
      const header = request.headers['last-event-id'];
      const raw = typeof header === 'string' && header.trim() !== '' ? header.trim() : request.query.last_event_id;
      let lastEventId = 0;
      if (raw !== undefined) {
        if (!/^[0-9]{1,16}$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
          throw new ApiError('invalid_request', 'Last-Event-ID must be a non-negative integer.', { location: 'headers' });
        }
        lastEventId = Number(raw);
      }
      const filter = { sessionIds: asList(request.query.session_id), types: asList(request.query.event_type) };
      if (raw === undefined && request.query.tail !== undefined) {
        lastEventId = await ctx.data.idBeforeNewest(customerId, filter, request.query.tail);
      }
      // HEAD (fastify exposes it for every GET) gets the headers only, not a stream that stays open.
      if (request.method === 'HEAD') return reply.type('text/event-stream; charset=utf-8').send('');
      const over = ctx.streams.refusal({ tokenId, customerId });
      if (over) {
        throw new ApiError('rate_limited', `Too many open event streams for this ${over.scope} (at most ${over.limit}); close one first.`, over);
      }
      // Read the first replay batch before taking over the response: if the store fails, the
      // error handler still answers 500 (as text/event-stream) instead of a 200 that is cut.
      // Nothing runs between this read and the subscription in openEventStream (no await).
      // (On PostgreSQL the read is awaited; the feed then continues from where it ended.)
      const read = ctx.events.eventsAfter(customerId, lastEventId, filter, ctx.settings.sse.replayBatch);
      const firstBatch = Array.isArray(read) ? read : await read;
      reply.hijack();
      if (ctx.settings.logRequests) {
        const opened = Date.now();
        ctx.log.info(`${request.method} ${redactIds(request.url)} 200 event stream opened`);
        reply.raw.once('close', () => ctx.log.info(`${request.method} ${redactIds(request.url)} event stream closed after ${((Date.now() - opened) / 1000).toFixed(1)}s`));
      }
      ctx.streams.add(
        openEventStream(reply.raw, reply.getHeaders(), {
          source: ctx.events,
          customerId,
          filter,
          lastEventId,
          options: ctx.settings.sse,
          firstBatch,
          onDelivered: (e) => ctx.metrics.delivered(e.created_at),
        }),
        reply.raw,
        { tokenId, customerId },
      );
    },
  });
}
