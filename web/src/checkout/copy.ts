// A value the payer takes elsewhere (the pay URL, a snippet, the transaction hash) with its Copy button
// (../shared/dom.ts copyButton: the clipboard, else the value selected for copying by hand).
import { copyButton, h } from '../shared/dom.js';

/** The value wraps anywhere (or, for a snippet, scrolls in its own box): it never widens the page. */
export function copyable(value: HTMLElement, text: string, what: string): HTMLElement {
  return h('div', { class: 'copyable' }, h('div', { class: 'value' }, value), copyButton(text, `Copy ${what}`, value));
}
