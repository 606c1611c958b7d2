// One-click import links for the apps that register a URL scheme for adding a subscription
// (the table is common/import-links.ts, shared with the subscription page a browser gets).
import type { Subscription } from '../../../common/api-types.ts';
import { SUBSCRIPTION_APPS } from '../../../common/import-links.ts';

export interface ImportLink {
  app: string;
  /** Where the app runs, for the person choosing. */
  platforms: string;
  href: string;
}

export function importLinks(sub: Pick<Subscription, 'url' | 'format_urls'>, name: string): ImportLink[] {
  return SUBSCRIPTION_APPS.map((a) => ({ app: a.app, platforms: a.platforms, href: a.href(sub, name) }));
}

/** The profile name the apps show for this client's subscription. */
export function profileName(clientId: string): string {
  return `VPN Access ${clientId}`;
}
