// The clients extension's names and bounds that need no schema. No imports: the renderer and the
// desktop main process read them without bundling the schema library. clients.ts takes its list
// bound from here; test/unit/renderer-weight.test.ts holds the statuses and the limit field names
// equal to the schemas' own (ClientStatusValue, schemas.ts's clientFields).
export const CLIENT_STATUSES = ['active', 'idle', 'over_quota', 'paused', 'expired', 'disabled'] as const;
export type ClientStatus = (typeof CLIENT_STATUSES)[number];

/** How many clients one list may name (`?client_id=`, repeated). */
export const MAX_LISTED_CLIENTS = 100;

/** Every client limit field (the template's and an override's), in the order the forms show them: `clientFields`' keys. */
export const CLIENT_LIMIT_KEYS = [
  'downloaded_bytes',
  'uploaded_bytes',
  'reset_period',
  'reset_anchor',
  'download_speed',
  'upload_speed',
  'max_sessions',
  'max_reconnections',
  'max_devices',
] as const;
export type ClientLimitKey = (typeof CLIENT_LIMIT_KEYS)[number];
