// The store's whole state (the union of its slices), the type every slice creator has, and
// the platform's operations the actions call. Slices see the whole state through get() and
// set(), so an action may call another slice's action (the zustand slices pattern).
import type { StateCreator } from 'zustand';
import { getPlatform } from '../platform/index.ts';
import type { AppSlice } from './slices/app.ts';
import type { EventsSlice } from './slices/events.ts';
import type { LimitsSlice } from './slices/limits.ts';
import type { SessionsSlice } from './slices/sessions.ts';
import type { SharingSlice } from './slices/sharing.ts';
import type { ZonesSlice } from './slices/zones.ts';

export type State = AppSlice & ZonesSlice & SessionsSlice & EventsSlice & LimitsSlice & SharingSlice;

export type SliceCreator<Slice> = StateCreator<State, [], [], Slice>;

/** Where a list stands while it loads. */
export type Load = 'idle' | 'loading' | 'ready' | 'error';

export const ops = () => getPlatform().ops;
