// Picks the implementation: the preload bridge when present, HTTP otherwise.
import type { Platform } from './platform.ts';
import { createElectronPlatform } from './electron.ts';
import { createWebPlatform } from './web.ts';

let instance: Platform | null = null;

export function getPlatform(): Platform {
  if (!instance) instance = window.app ? createElectronPlatform(window.app) : createWebPlatform();
  return instance;
}

/** Which platform getPlatform() gives, known without making it (making the web one reads the address). */
export function platformKind(): Platform['kind'] {
  return instance?.kind ?? (window.app ? 'electron' : 'web');
}

/** Tests and benchmarks may inject a platform before the app renders. */
export function setPlatform(p: Platform): void {
  instance = p;
}

export type { Platform } from './platform.ts';
export { ApiError, isApiError, toApiError } from './platform.ts';
