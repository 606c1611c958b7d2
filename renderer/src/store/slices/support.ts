// The support slice: a session's live connections and the recent refusals of a session or a
// client, read on demand (the Connections and Refusals cards of a session keep what they show).
import { ops, type SliceCreator, type SupportSlice } from '../state.ts';

export const createSupportSlice: SliceCreator<SupportSlice> = () => ({
  sessionConnections: (id) => ops().sessionConnections(id),
  sessionRefusals: (id) => ops().sessionRefusals(id),
  clientRefusals: (clientId) => ops().clientRefusals(clientId),
});
