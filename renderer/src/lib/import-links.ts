// One-click import links for the apps that register a URL scheme for adding a subscription.
// Each gets the URL of the format it reads best (sing-box its JSON, Clash Meta its YAML; the
// others recognise the format from their User-Agent). Schemes as each project documents them:
//   v2rayNG           v2rayng://install-config?url=<encoded URL>
//   Hiddify           hiddify://import/<URL>#<name>
//   sing-box (SFA/SFI/SFM)  sing-box://import-remote-profile?url=<encoded URL>#<encoded name>
//   Clash Meta / Mihomo clients  clash://install-config?url=<encoded URL>
import type { Subscription } from '../../../common/api-types.ts';

export interface ImportLink {
  app: string;
  /** Where the app runs, for the person choosing. */
  platforms: string;
  href: string;
}

export function importLinks(sub: Pick<Subscription, 'url' | 'format_urls'>, name: string): ImportLink[] {
  const enc = encodeURIComponent;
  return [
    { app: 'v2rayNG', platforms: 'Android', href: `v2rayng://install-config?url=${enc(sub.url)}` },
    { app: 'Hiddify', platforms: 'Android, iOS, Windows, macOS, Linux', href: `hiddify://import/${sub.url}#${enc(name)}` },
    { app: 'sing-box', platforms: 'Android, iOS, macOS', href: `sing-box://import-remote-profile?url=${enc(sub.format_urls['sing-box'])}#${enc(name)}` },
    { app: 'Clash Meta (Mihomo)', platforms: 'Clash Verge, FlClash and other Mihomo clients', href: `clash://install-config?url=${enc(sub.format_urls.clash)}` },
  ];
}

/** The profile name the apps show for this client's subscription. */
export function profileName(clientId: string): string {
  return `VPN Access ${clientId}`;
}
