// A QR code as inline SVG, drawn with DOM calls (no markup strings, nothing the page's CSP has to allow). The
// symbol comes from `qr` (paulmillr/qr: zero dependencies, small) as a matrix of modules, with the quiet zone of 4
// modules the standard asks for, so phones scan it on any background.
import encodeQR from 'qr';

const SVG = 'http://www.w3.org/2000/svg';
/** Modules of light margin around the symbol (ISO/IEC 18004 asks for 4). */
const QUIET = 4;

export function qrCode(text: string, label: string): SVGSVGElement {
  const modules = encodeQR(text, 'raw', { ecc: 'medium', border: QUIET });
  const size = modules.length;
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${size} ${size}`);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  svg.setAttribute('shape-rendering', 'crispEdges');
  svg.setAttribute('data-testid', 'deposit-qr');
  const title = document.createElementNS(SVG, 'title');
  title.textContent = label;
  const background = document.createElementNS(SVG, 'rect');
  for (const [name, value] of [['width', size], ['height', size], ['fill', '#fff']] as const) background.setAttribute(name, String(value));
  // One path of unit squares, one per dark module, row by row.
  let d = '';
  modules.forEach((row, y) => row.forEach((dark, x) => (d += dark ? `M${x} ${y}h1v1h-1z` : '')));
  const path = document.createElementNS(SVG, 'path');
  path.setAttribute('d', d);
  path.setAttribute('fill', '#000');
  svg.append(title, background, path);
  return svg;
}
