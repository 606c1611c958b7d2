// GET /v2/usage (extension): the traffic history in time buckets, for the charts of the
// session detail, the per-client page and the customer dashboard. Owner and agent tokens alike
// (it is read-only, like the session reads); a customer reads only its own sessions' traffic.
//
// The range [from, to) is widened to whole steps; every bucket of it is answered, those without
// traffic as zeros (at most MAX_USAGE_BUCKETS: a wider range is 400, naming a coarser step). A
// step is answered from the rows of that step and of every finer one (minute rows summed into
// hours, ...): compaction's cut-offs (server/usage/history.ts) leave no coarser row inside a
// range whose step is still kept, so every answer is exact. A step no longer kept for `from`
// (minutes older than a day, hours older than 90 days) is 400, naming the step to ask instead.
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../contract/errors.ts';
import { MAX_USAGE_BUCKETS, TOP_CLIENTS, UsageQuery, UsageReport, type UsageStepValue } from '../contract/usage.ts';
import { callerOf } from '../plugins/auth.ts';
import type { Services } from '../services.ts';
import { USAGE_STEP_MS, type UsageStep } from '../store/store.ts';
import { usageCutoffs } from '../usage/history.ts';
import { bearer, responses } from './common.ts';

const STEPS: UsageStep[] = ['minute', 'hour', 'day'];
const KEPT: Record<UsageStep, string> = { minute: 'for a day', hour: 'for 90 days', day: 'for two years' };

const invalid = (field: string, problem: string, extra: Record<string, unknown> = {}) =>
  new ApiError('invalid_request', `Invalid query parameter: ${field} ${problem}.`, { location: 'querystring', fields: [{ field, problem }], ...extra });

/** Bucket count of [from, to) at `step`, once both ends are rounded out to whole steps. */
function bucketCount(from: number, to: number, step: UsageStep): number {
  const ms = USAGE_STEP_MS[step];
  return Math.ceil(to / ms) - Math.floor(from / ms);
}

/** The finest step kept for `from` that gives at most MAX_USAGE_BUCKETS buckets (day when none does). */
function chooseStep(from: number, to: number, now: number): UsageStep {
  const cut = usageCutoffs(now);
  if (from >= cut.minute && bucketCount(from, to, 'minute') <= MAX_USAGE_BUCKETS) return 'minute';
  if (from >= cut.hour && bucketCount(from, to, 'hour') <= MAX_USAGE_BUCKETS) return 'hour';
  return 'day';
}

export async function usageRoutes(app: FastifyInstance, ctx: Services): Promise<void> {
  app.get<{ Querystring: UsageQuery }>('/usage', {
    schema: {
      summary: 'Traffic history in time buckets (extension)',
      description:
        'Extension: bytes per minute, hour or day of the customer\'s sessions, filtered by client_id, session_id, zone and node. ' +
        'Minute buckets are kept for a day, hour buckets for 90 days, day buckets for two years. Every bucket of the range is listed (zeros without traffic), at most 400.',
      tags: ['usage'],
      security: bearer,
      querystring: UsageQuery,
      response: responses({ 200: UsageReport }, 400, 401, 404, 429, 500),
      'x-extension': true,
    } as object,
    handler: async (request): Promise<UsageReport> => {
      const { customerId } = callerOf(request);
      const q = request.query;
      if (q.session_id !== undefined && !(await ctx.data.getSessionOf(customerId, q.session_id))) {
        throw new ApiError('session_not_found', 'Session not found.', {});
      }
      const now = ctx.usage?.now() ?? Date.now();
      const to = q.to !== undefined ? Date.parse(q.to) : now;
      const from = q.from !== undefined ? Date.parse(q.from) : to - USAGE_STEP_MS.day;
      if (!(from < to)) throw invalid('from', 'must be before to');
      const step: UsageStep = q.step ?? chooseStep(from, to, now);
      const cut = usageCutoffs(now);
      if (step !== 'day' && from < cut[step]) {
        const coarser = step === 'minute' ? 'hour' : 'day';
        throw invalid('step', `${step} buckets are kept ${KEPT[step]}: ask step=${coarser}, or a from at or after ${new Date(cut[step]).toISOString()}`, {
          oldest: new Date(cut[step]).toISOString(),
        });
      }
      const count = bucketCount(from, to, step);
      if (count > MAX_USAGE_BUCKETS) {
        throw invalid('step', `gives ${count} buckets over this range, more than ${MAX_USAGE_BUCKETS}: ask a coarser step or a shorter range`, {
          buckets: count,
          max_buckets: MAX_USAGE_BUCKETS,
        });
      }
      const ms = USAGE_STEP_MS[step];
      const start = Math.floor(from / ms) * ms;
      const end = start + count * ms;
      // What this process holds unwritten is written first (other instances flush within seconds).
      await ctx.usage?.flush();
      const query = {
        customer_id: customerId,
        client_id: q.client_id,
        session_id: q.session_id,
        zone: q.zone,
        node: q.node,
        from: start,
        to: end,
        stepMs: ms,
        steps: STEPS.slice(0, STEPS.indexOf(step) + 1),
      };
      const rows = new Map((await ctx.data.usageBuckets(query)).map((r) => [Number(r.start), r]));
      const buckets: UsageReport['buckets'] = [];
      const totals = { uploaded_bytes: 0, downloaded_bytes: 0 };
      for (let t = start; t < end; t += ms) {
        const r = rows.get(t);
        const up = r ? Number(r.uploaded_bytes) : 0;
        const down = r ? Number(r.downloaded_bytes) : 0;
        totals.uploaded_bytes += up;
        totals.downloaded_bytes += down;
        buckets.push({ start: new Date(t).toISOString(), uploaded_bytes: up, downloaded_bytes: down });
      }
      const report: UsageReport = { from: new Date(start).toISOString(), to: new Date(end).toISOString(), step: step as UsageStepValue, buckets, totals };
      if (q.client_id === undefined && q.session_id === undefined) {
        report.top_clients = (await ctx.data.usageTopClients(query, TOP_CLIENTS)).map((c) => ({
          client_id: c.client_id,
          uploaded_bytes: Number(c.uploaded_bytes),
          downloaded_bytes: Number(c.downloaded_bytes),
        }));
      }
      return report;
    },
  });
}
