// Schema of the doctor extension: GET /v2/doctor (owner tokens only), the same report as
// `vpn-access doctor --json`; and GET /v2/health's answer (no token). Extensions of the contract (`x-extension: true`).
import Type, { type Static } from 'typebox';

const ext = { 'x-extension': true } as const;

export const DoctorStatus = Type.Union([Type.Literal('pass'), Type.Literal('warn'), Type.Literal('fail')], ext);

export const DoctorCheck = Type.Object(
  {
    id: Type.String({ description: 'Stable id for scripts, such as port-api, tls-pin, database, cluster.' }),
    title: Type.String({ description: 'What was checked, in words.' }),
    status: DoctorStatus,
    detail: Type.String({ description: 'One line: what was found.' }),
    fix: Type.String({ description: 'What to do, in words; empty for a pass.' }),
  },
  { ...ext, additionalProperties: false },
);

export const DoctorReport = Type.Object(
  {
    checks: Type.Array(DoctorCheck),
    summary: Type.Object(
      { pass: Type.Integer({ minimum: 0 }), warn: Type.Integer({ minimum: 0 }), fail: Type.Integer({ minimum: 0 }) },
      { additionalProperties: false },
    ),
  },
  { ...ext, additionalProperties: false, description: 'The checks the server can run about itself: what makes clients fail before they connect.' },
);
export type DoctorReport = Static<typeof DoctorReport>;

export const Health = Type.Object(
  { status: Type.Literal('ok', { description: 'This instance serves: its database answered a read within 2 s, and refused no write in the last 10 s.' }) },
  { ...ext, description: 'GET /v2/health: for load balancers and service managers; no token needed. An instance that cannot serve answers 500 service_unavailable (details.reason) instead.' },
);
