// A few lines instead of a framework: the checkout must stay small, and these pages are forms and tables.

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | ((event: Event) => void)>;

/** An element with attributes (`on…` ones become listeners; false/null ones are left out) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: (Child | Child[])[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === 'function') element.addEventListener(name.slice(2).toLowerCase(), value);
    else if (value === true) element.setAttribute(name, '');
    else if (value !== false && value !== null && value !== undefined) element.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(typeof child === 'object' ? child : String(child));
  }
  return element;
}

/** Replaces everything inside `parent`. */
export function mount(parent: Element, ...children: (Child | Child[])[]): void {
  parent.replaceChildren(...children.flat().filter((c): c is Node | string => c !== null && c !== undefined && c !== false).map((c) => (typeof c === 'number' ? String(c) : c)));
}

/**
 * A card whose body loads when it is first opened (a list of many costs one request per card opened, not
 * per card shown): `fill` fills the body; `reload` runs it again, and a failure shows as an error in the body.
 */
export function lazyPanel(attrs: Attrs, summary: Child[], open: boolean, fill: (body: HTMLElement) => Promise<void>): { details: HTMLDetailsElement; reload: () => Promise<void> } {
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  let loaded = false;
  const reload = async () => {
    loaded = true;
    try {
      await fill(body);
    } catch (error) {
      mount(body, notice('error', (error as Error).message));
    }
  };
  const details: HTMLDetailsElement = h('details', { ...attrs, ontoggle: () => void (details.open && !loaded && reload()) }, h('summary', {}, ...summary), body);
  details.open = open;
  return { details, reload };
}

/** A labelled input: the label names it for screen readers and clicking it focuses the field. */
export function field(label: string, input: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, hint?: string): HTMLElement {
  input.id ||= `f-${Math.random().toString(36).slice(2, 9)}`;
  const hintId = hint ? `${input.id}-hint` : null;
  if (hintId) input.setAttribute('aria-describedby', hintId);
  return h('div', { class: 'field' }, h('label', { for: input.id }, label), input, hint ? h('small', { id: hintId }, hint) : null);
}

/** A message region screen readers announce: role=status for news, role=alert for errors. */
export function notice(kind: 'info' | 'error' | 'success', ...children: (Child | Child[])[]): HTMLElement {
  return h('p', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, ...children);
}

/**
 * A table that stacks on a phone (styles.css, `table.stack`): each row becomes a block and each cell shows its
 * column's name (data-label). The explicit roles keep it a table for screen readers once CSS changes its display.
 */
export function dataTable(columns: string[], rows: { cells: (Child | Child[])[]; attrs?: Attrs }[], caption?: string): HTMLTableElement {
  return h(
    'table',
    { class: 'stack', role: 'table' },
    caption ? h('caption', {}, caption) : null,
    h('thead', { role: 'rowgroup' }, h('tr', { role: 'row' }, columns.map((c) => h('th', { scope: 'col', role: 'columnheader' }, c)))),
    h('tbody', { role: 'rowgroup' }, rows.map((row) => h('tr', { role: 'row', ...row.attrs }, row.cells.map((cell, i) => h('td', { role: 'cell', 'data-label': columns[i] }, cell))))),
  );
}

/**
 * A Copy button for `text`. Without the async clipboard (a page not served over https or loopback), it selects
 * `select` (the element showing the text) so the user can copy it by hand, and says so.
 */
export function copyButton(text: string, label: string, select?: Element): HTMLButtonElement {
  const button: HTMLButtonElement = h(
    'button',
    {
      type: 'button',
      class: 'secondary',
      'aria-label': label,
      onclick: async () => {
        try {
          await navigator.clipboard.writeText(text);
          button.textContent = 'Copied';
        } catch {
          if (select) getSelection()?.selectAllChildren(select);
          button.textContent = 'Selected: copy it';
        }
      },
    },
    'Copy',
  );
  return button;
}

/**
 * A time that says itself relative to now (`say(iso, now)`) and keeps saying it: every live time on the page is
 * rewritten each second, so "in 5 s" turns into "Expired 1 s ago" without a reload. The absolute time is its title.
 */
export function liveTime(iso: string, say: (iso: string, now: number) => string, absolute?: string): HTMLTimeElement {
  const time = h('time', { datetime: iso, title: absolute ?? null }, say(iso, Date.now()));
  live.set(time, { say, unseen: 0 });
  ticking ??= setInterval(tick, 1000);
  return time;
}

/** Live times, and for how many ticks each has not been on the page (it may be built before it is mounted). */
const live = new Map<HTMLTimeElement, { say: (iso: string, now: number) => string; unseen: number }>();
let ticking: ReturnType<typeof setInterval> | undefined;

function tick(): void {
  const now = Date.now();
  for (const [time, entry] of live) {
    if (!time.isConnected) {
      // Gone with the page it was on (or never shown): forget it.
      if (entry.unseen < 0 || ++entry.unseen > 60) live.delete(time);
      continue;
    }
    entry.unseen = -1; // shown once: the next time it is off the page, it is gone
    const text = entry.say(time.dateTime, now);
    if (time.textContent !== text) time.textContent = text;
  }
}
