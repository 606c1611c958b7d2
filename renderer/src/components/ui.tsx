// Small shared pieces: status badge, spinner, empty state, error banner, copy button, form row, screen.
import { useState, type ReactNode } from 'react';
import type { ApiErrorInfo } from '../../../common/result.ts';
import { humanError } from '../lib/errors.ts';
import { toast } from '../store/index.ts';

export function StatusBadge({ status, paused }: { status: string; paused?: boolean }) {
  return (
    <span className="badges">
      <span className={`badge badge-${status}`}>{status}</span>
      {paused ? <span className="badge badge-paused">paused</span> : null}
    </span>
  );
}

/** A busy indicator with its words; `ticking` (seconds counting up) is shown but not announced each time it changes. */
export function Spinner({ label = 'Loading…', ticking }: { label?: string; ticking?: string }) {
  return (
    <span className="spinner-wrap" role="status">
      <span className="spinner" aria-hidden="true" />
      <span>
        {label}
        {ticking ? <span aria-hidden="true">{ticking}</span> : null}
      </span>
    </span>
  );
}

export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <p className="empty-title">{title}</p>
      {children ? <div className="empty-body">{children}</div> : null}
    </div>
  );
}

/** An error in words: an API error (put in words by humanError) or a sentence already written; nothing when none. */
export function ErrorBanner({ error, onRetry }: { error: ApiErrorInfo | string | null | undefined; onRetry?: () => void }) {
  if (!error) return null;
  return (
    <div className="error-banner" role="alert">
      <span>{typeof error === 'string' ? error : humanError(error)}</span>
      {onRetry ? (
        <button type="button" className="btn btn-small" onClick={onRetry}>
          Try again
        </button>
      ) : null}
    </div>
  );
}

/** Clipboard API first; the old selection-and-copy way where the API is refused. */
export async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    return;
  } catch (e) {
    const area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.style.position = 'fixed';
    area.style.opacity = '0';
    document.body.appendChild(area);
    area.select();
    const ok = document.execCommand('copy');
    area.remove();
    if (!ok) throw e;
  }
}

/** Copies `text`; `caption` is a shorter visible text than the accessible `label`; `disabled` with the reason as `title`. */
export function CopyButton({ text, label, getText, caption, disabled, title, small }: { text?: string; label: string; getText?: () => Promise<unknown>; caption?: string; disabled?: boolean; title?: string; small?: boolean }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      // A tick for 1.5 s after a copy (the toast says it in words): the words on the button stay
      // as they are, part of its name (WCAG 2.5.3).
      className={`${small ? 'btn btn-small' : 'btn'}${done ? ' btn-copied' : ''}`}
      aria-label={label}
      disabled={disabled}
      title={title}
      onClick={async (e) => {
        e.stopPropagation();
        try {
          if (getText) await getText();
          else await copyText(text ?? '');
          setDone(true);
          toast('Copied to the clipboard.');
          setTimeout(() => setDone(false), 1500);
        } catch (e) {
          toast(`Could not copy: ${e instanceof Error ? e.message : String(e)}`, 'error');
        }
      }}
    >
      {caption ?? label}
    </button>
  );
}

export function Field({ label, value, mono }: { label: string; value: ReactNode; mono?: boolean }) {
  return (
    <div className="kv">
      <dt>{label}</dt>
      <dd className={mono ? 'mono' : undefined}>{value}</dd>
    </div>
  );
}

/** The options of a filter select: a first "any" choice (value "") and one option per value. */
export function AnyOrOptions({ any, values, label = (v) => v }: { any: string; values: readonly string[]; label?: (v: string) => string }) {
  return (
    <>
      <option value="">{any}</option>
      {values.map((v) => (
        <option key={v} value={v}>
          {label(v)}
        </option>
      ))}
    </>
  );
}

/**
 * An on/off switch: a checkbox with the switch role, its track and its caption (the accessible
 * name). `onChange` gets the asked-for state.
 */
export function Switch({ label, checked, disabled, className, onChange }: { label: string; checked: boolean; disabled?: boolean; className?: string; onChange: (on: boolean) => void }) {
  return (
    <label className={className ? `switch ${className}` : 'switch'}>
      <input type="checkbox" role="switch" checked={checked} aria-checked={checked} disabled={disabled} onChange={(e) => onChange(e.target.checked)} />
      <span className="switch-track" aria-hidden="true" />
      <span>{label}</span>
    </label>
  );
}

/**
 * One row of a form: its caption and its control. With `htmlFor` the caption is the control's
 * <label> (its accessible name); without, a plain caption for a group or a read-only value.
 */
export function FormRow({ label, htmlFor, controlClass, children }: { label: string; htmlFor?: string; controlClass?: string; children: ReactNode }) {
  return (
    <div className="form-row">
      {htmlFor ? <label htmlFor={htmlFor}>{label}</label> : <span className="label">{label}</span>}
      <div className={controlClass ? `control ${controlClass}` : 'control'}>{children}</div>
    </div>
  );
}

/**
 * A screen: a section named by its heading, with the header row (title, then `head`: status,
 * counts, actions) above its content.
 */
export function Screen({ name, title, head, children }: { name: string; title: ReactNode; head?: ReactNode; children: ReactNode }) {
  return (
    <section className="screen" aria-labelledby={`${name}-title`}>
      <header className="screen-head">
        <h1 id={`${name}-title`}>{title}</h1>
        {head}
      </header>
      {children}
    </section>
  );
}
