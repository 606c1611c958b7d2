// The apps a client subscription is offered to, in the client view and on the subscription page
// a browser gets: where each runs, the URL it should fetch (sing-box its JSON, Clash Meta its
// YAML; the others recognise the format from their User-Agent), the deep link that opens it on
// its import screen, and what to do in it. Schemes as each project documents them:
//   v2rayNG                      v2rayng://install-config?url=<encoded URL>
//   Hiddify                      hiddify://import/<URL>#<name>
//   sing-box (SFA/SFI/SFM)       sing-box://import-remote-profile?url=<encoded URL>#<encoded name>
//   Clash Meta / Mihomo clients  clash://install-config?url=<encoded URL>
//   Streisand                    streisand://import/<URL>   (Happ reads the same URL from the clipboard)

/** The two URLs of a subscription the links are made from. */
export interface SubscriptionUrls {
  url: string;
  format_urls: { 'sing-box': string; clash: string };
}

export interface SubscriptionApp {
  app: string;
  /** Where the app runs, for the person choosing. */
  platforms: string;
  /** The subscription URL this app fetches. */
  feedUrl(sub: SubscriptionUrls): string;
  /** The deep link that opens the app on its import screen. */
  href(sub: SubscriptionUrls, name: string): string;
  /** What to do in the app, in a sentence. */
  steps: string;
}

const enc = encodeURIComponent;

export const SUBSCRIPTION_APPS: readonly SubscriptionApp[] = [
  {
    app: 'v2rayNG',
    platforms: 'Android',
    feedUrl: (s) => s.url,
    href: (s) => `v2rayng://install-config?url=${enc(s.url)}`,
    steps: 'Press Import, or in v2rayNG add a subscription with this URL; then update it and connect.',
  },
  {
    app: 'Hiddify',
    platforms: 'Android, iOS, Windows, macOS, Linux',
    feedUrl: (s) => s.url,
    href: (s, name) => `hiddify://import/${s.url}#${enc(name)}`,
    steps: 'Press Import, or in Hiddify choose + and add the copied URL; then press connect.',
  },
  {
    app: 'sing-box',
    platforms: 'Android, iOS, macOS',
    feedUrl: (s) => s.format_urls['sing-box'],
    href: (s, name) => `sing-box://import-remote-profile?url=${enc(s.format_urls['sing-box'])}#${enc(name)}`,
    steps: 'Press Import, or in sing-box make a new remote profile with this URL; phones connect through its VPN (tun).',
  },
  {
    app: 'Clash Meta (Mihomo)',
    platforms: 'Clash Verge, FlClash and other Mihomo clients',
    feedUrl: (s) => s.format_urls.clash,
    href: (s) => `clash://install-config?url=${enc(s.format_urls.clash)}`,
    steps: 'Press Import, or add a profile from this URL in your Clash app; then pick the "VPN Access Desk" group and turn on the system proxy or TUN.',
  },
  {
    app: 'Streisand / Happ',
    platforms: 'iOS, macOS',
    feedUrl: (s) => s.url,
    href: (s) => `streisand://import/${s.url}`,
    steps: 'Press Import (Streisand), or copy the URL and add it from the clipboard in Happ.',
  },
];
