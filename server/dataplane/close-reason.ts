// Why a relayed connection was closed: one typed list, so every place that cuts a connection
// names its reason from it, and the relay can tell a byte cap (let the counted bytes drain)
// from everything else (cut at once).
export type CloseReason =
  // the client went away, or finished a stream that has no half-close (UDP)
  | 'client_closed'
  | 'client_end'
  // the destination side ended badly, or the client did not read the rest within the grace time
  | 'outbound_closed'
  | 'udp_error'
  | 'udp_frame'
  | 'grace'
  // nothing moved for the idle timeout, or a ws client answered no ping
  | 'idle_timeout'
  | 'ping_timeout'
  // the inbound refused the request before relaying
  | 'header_timeout'
  | 'bad_header'
  | 'mux'
  | 'refused'
  | 'dial_failed'
  | 'responded'
  // the proxy: a request body or an answer whose framing cannot be trusted
  | 'bad_body'
  | 'bad_answer'
  // the runtime cut it: a byte cap, a pause, the data plane closing
  | CapReason
  | 'paused'
  // the owner disabled the session's client (clients extension): cut at once, refused until enabled
  | 'client_disabled'
  | 'shutdown';

/** A byte cap reached at one level of the limits. */
/** A byte cap reached, or the session's expires_at passed: the session ends, cut by a reset. */
export type CapReason = 'session_cap' | 'client_cap' | 'global_cap' | 'expired';

export function isCapReason(reason: CloseReason): reason is CapReason {
  return reason === 'session_cap' || reason === 'client_cap' || reason === 'global_cap' || reason === 'expired';
}
