// Settings → Appearance: the colour theme (System, Light, Dark), applied at once and kept in
// this window's storage through the store.
import { setTheme, useStore, type Theme } from '../store/index.ts';
import { selectTheme } from '../store/selectors.ts';

const THEMES: Array<{ value: Theme; label: string; help: string }> = [
  { value: 'system', label: 'System', help: 'follows the light or dark setting of this computer or phone' },
  { value: 'light', label: 'Light', help: 'always light' },
  { value: 'dark', label: 'Dark', help: 'always dark' },
];

export function AppearanceCard() {
  const theme = useStore(selectTheme);
  return (
    <div className="card">
      <h2 id="appearance-title">Appearance</h2>
      <fieldset className="theme-choice" aria-describedby="theme-help">
        <legend>Theme</legend>
        {THEMES.map((t) => (
          <label key={t.value} className="radio">
            <input type="radio" name="theme" value={t.value} checked={theme === t.value} onChange={() => setTheme(t.value)} />
            <span>{t.label}</span>
          </label>
        ))}
      </fieldset>
      <p id="theme-help" className="help">
        {THEMES.find((t) => t.value === theme)?.label}: {THEMES.find((t) => t.value === theme)?.help}. Kept in this window.
      </p>
    </div>
  );
}
