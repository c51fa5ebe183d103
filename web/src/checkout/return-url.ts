// The way back to the merchant after paying: only an absolute http(s) URL becomes a link, as the URL parser
// reads the merchant's value. The server validates returnUrl when the intent is created; this is the page's own
// guard, so a view that carried `javascript:`, `data:` or a relative path could still never be a link.

export function returnHref(raw: string | null | undefined): string | null {
  if (typeof raw !== 'string' || raw === '') return null;
  try {
    const url = new URL(raw); // no base: a relative URL throws
    // The parsed form: what the link follows is exactly what was checked.
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
  } catch {
    return null;
  }
}
