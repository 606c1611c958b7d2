// `vpn-access token create|list|revoke`: API tokens of a data folder or a PostgreSQL database;
// a new token is printed once (only its hash is stored).
import { parseArgs } from 'node:util';
import type { Role } from '../store/store.ts';
import type { ControlStore } from '../store/control.ts';
import type { AuditChange } from '../audit/trail.ts';
import { isoNow } from '../time.ts';

/** Records a token change made on the command line in the audit trail (actor `cli`). */
async function cliAudit(store: Pick<ControlStore, 'recordAudit'>, customerId: string, change: AuditChange): Promise<void> {
  await store.recordAudit({
    customer_id: customerId,
    created_at: isoNow(),
    actor_token_id: null,
    actor_role: 'cli',
    action: change.action,
    target_type: change.target.type,
    target_id: change.target.id,
    session_id: null,
    client_id: null,
    before: change.before ?? null,
    after: change.after ?? null,
  });
}
import { fail, openStore } from './shared.ts';

export async function token(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: { customer: { type: 'string' }, role: { type: 'string' }, 'data-dir': { type: 'string' }, database: { type: 'string' }, json: { type: 'boolean' } },
  });
  if (sub !== 'create' && sub !== 'list' && sub !== 'revoke') fail(`unknown token command "${sub ?? ''}"; use create, list or revoke`);
  const role = (values.role ?? 'owner') as Role;
  if (sub === 'create') {
    if (role !== 'owner' && role !== 'agent') fail('--role takes owner or agent');
    if (!values.customer) fail('token create needs --customer NAME, such as: vpn-access token create --customer default --role owner');
  }
  if (sub === 'revoke' && !positionals[0]) fail('token revoke needs a token id, prefix or the token itself');
  const store = await openStore(values, sub === 'create');
  try {
    if (sub === 'create') {
      const made = await store.createToken(values.customer!, role);
      await cliAudit(store, made.info.customer_id, { action: 'token.create', target: { type: 'token', id: made.info.id }, after: { role: made.info.role, prefix: made.info.prefix } });
      process.stdout.write(made.token + '\n');
    } else if (sub === 'list') {
      const rows = await store.listTokens();
      if (values.json) process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
      else if (rows.length === 0) process.stdout.write('no tokens\n');
      else
        for (const t of rows)
          process.stdout.write(`${t.id}  ${t.prefix}…  ${t.role.padEnd(5)}  ${t.customer_name}  created ${t.created_at}${t.revoked_at ? `  revoked ${t.revoked_at}` : ''}\n`);
    } else {
      const ref = positionals[0];
      const t = await store.revokeToken(ref);
      if (!t) fail(`no single active token matches "${ref.slice(0, 10)}…"`);
      await cliAudit(store, t.customer_id, { action: 'token.revoke', target: { type: 'token', id: t.id }, before: { role: t.role, prefix: t.prefix, revoked: false }, after: { revoked: true } });
      process.stdout.write(`revoked ${t.id} (${t.prefix}…, ${t.role}, customer ${t.customer_name})\n`);
    }
  } finally {
    await store.close();
  }
}
