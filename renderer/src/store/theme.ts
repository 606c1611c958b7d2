// The colour theme: the system's, or light or dark whatever the system says. Kept in this
// window's localStorage (the desktop app's renderer has one too) and applied at once, as
// `data-theme` on the root element (styles in theme.css).
export type Theme = 'system' | 'light' | 'dark';

export const THEME_KEY = 'vpn-access.theme';
const THEMES: readonly Theme[] = ['system', 'light', 'dark'];

export function readTheme(): Theme {
  try {
    const v = localStorage.getItem(THEME_KEY);
    if (v && (THEMES as readonly string[]).includes(v)) return v as Theme;
  } catch {
    /* storage unavailable */
  }
  return 'system';
}

export function saveTheme(theme: Theme): void {
  try {
    if (theme === 'system') localStorage.removeItem(THEME_KEY);
    else localStorage.setItem(THEME_KEY, theme);
  } catch {
    /* storage unavailable: the choice holds for this window only */
  }
}

export function applyTheme(theme: Theme): void {
  if (typeof document === 'undefined') return;
  if (theme === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
}
