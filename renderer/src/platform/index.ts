// Picks the implementation: the preload bridge when present, HTTP otherwise.
import type { Platform } from './platform.ts';
import { createElectronPlatform } from './electron.ts';
import { createWebPlatform } from './web.ts';

let instance: Platform | null = null;

export function getPlatform(): Platform {
  if (!instance) instance = window.app ? createElectronPlatform(window.app) : createWebPlatform();
  return instance;
}

/** Tests and benchmarks may inject a platform before the app renders. */
export function setPlatform(p: Platform): void {
  instance = p;
}

export type { Platform } from './platform.ts';
export { ApiError, isApiError, toApiError } from './platform.ts';
