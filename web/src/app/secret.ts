import { h } from '../shared/dom.js';

/** A secret shown exactly once, with a copy button; the server keeps only its keyed hash. */
export function shownOnce(label: string, secret: string): HTMLElement {
  const copy = h('button', { type: 'button', class: 'secondary', onclick: () => void navigator.clipboard?.writeText(secret).then(() => (copy.textContent = 'Copied')) }, 'Copy');
  return h(
    'div',
    { class: 'secret', role: 'status' },
    h('p', {}, h('strong', {}, label), ' — shown only this once. Store it now; it cannot be shown again.'),
    h('div', { class: 'row' }, h('code', { 'data-testid': 'secret' }, secret), copy),
  );
}
