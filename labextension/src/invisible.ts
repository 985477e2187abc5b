/**
 * Characters a reader cannot see, made visible where the user accepts or reads the agent's text.
 *
 * Trojan Source: bidi controls reorder how code reads, zero-width characters hide inside names,
 * control characters are drawn as nothing. Each one is shown as a badge (`<U+202E RLO>`, its
 * Unicode name as the tooltip) and counted, so a view can warn above the text. The same
 * classification as agentik_jupyter/security/invisible.py (the kernel's cards).
 */

const BIDI: Record<number, string> = {
  0x202a: 'LRE', 0x202b: 'RLE', 0x202c: 'PDF', 0x202d: 'LRO', 0x202e: 'RLO',
  0x2066: 'LRI', 0x2067: 'RLI', 0x2068: 'FSI', 0x2069: 'PDI',
  0x200e: 'LRM', 0x200f: 'RLM', 0x061c: 'ALM'
};
const ZERO_WIDTH: Record<number, string> = {
  0x200b: 'ZWSP', 0x200c: 'ZWNJ', 0x200d: 'ZWJ', 0x2060: 'WJ', 0xfeff: 'BOM',
  0x034f: 'CGJ', 0x180e: 'MVS', 0x115f: 'HANGUL FILLER', 0x1160: 'HANGUL FILLER',
  0x3164: 'HANGUL FILLER', 0xffa0: 'HANGUL FILLER', 0x17b4: 'KHMER VOWEL', 0x17b5: 'KHMER VOWEL'
};
const SEPARATORS: Record<number, string> = { 0x2028: 'LSEP', 0x2029: 'PSEP', 0x0085: 'NEL' };
const C0 = ('NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI DLE DC1 DC2 DC3 DC4 NAK SYN ETB ' +
  'CAN EM SUB ESC FS GS RS US').split(' ');
/** Full names for the tooltip, where the short label is not enough. */
const NAMES: Record<string, string> = {
  LRE: 'LEFT-TO-RIGHT EMBEDDING', RLE: 'RIGHT-TO-LEFT EMBEDDING', PDF: 'POP DIRECTIONAL FORMATTING',
  LRO: 'LEFT-TO-RIGHT OVERRIDE', RLO: 'RIGHT-TO-LEFT OVERRIDE', LRI: 'LEFT-TO-RIGHT ISOLATE',
  RLI: 'RIGHT-TO-LEFT ISOLATE', FSI: 'FIRST STRONG ISOLATE', PDI: 'POP DIRECTIONAL ISOLATE',
  LRM: 'LEFT-TO-RIGHT MARK', RLM: 'RIGHT-TO-LEFT MARK', ALM: 'ARABIC LETTER MARK',
  ZWSP: 'ZERO WIDTH SPACE', ZWNJ: 'ZERO WIDTH NON-JOINER', ZWJ: 'ZERO WIDTH JOINER', WJ: 'WORD JOINER',
  BOM: 'ZERO WIDTH NO-BREAK SPACE', LSEP: 'LINE SEPARATOR', PSEP: 'PARAGRAPH SEPARATOR'
};
const OTHER = /^[\p{Cc}\p{Cf}\p{Cs}]$/u;

/** The short name of a character a reader cannot see (`RLO`, `ZWSP`, `NUL`), else null. */
export function label(char: string): string | null {
  if (char === '\n' || char === '\t') {
    return null;
  }
  const code = char.codePointAt(0) ?? 0;
  const known = BIDI[code] ?? ZERO_WIDTH[code] ?? SEPARATORS[code];
  if (known) {
    return known;
  }
  if (code < 0x20) {
    return C0[code];
  }
  if (code === 0x7f) {
    return 'DEL';
  }
  if (code >= 0xe0100 && code <= 0xe01ef) {
    return 'VS';
  }
  if (!OTHER.test(char)) {
    return null;
  }
  if (code >= 0xe0000 && code <= 0xe007f) {
    return 'TAG';
  }
  return /\p{Cc}/u.test(char) ? 'CTRL' : /\p{Cs}/u.test(char) ? 'SURROGATE' : 'FORMAT';
}

/** `<U+202E RLO>`: the plain-text stand-in for a hidden character. */
export function badgeText(char: string): string {
  const hex = (char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0');
  return `<U+${hex} ${label(char) ?? 'CHAR'}>`;
}

/** How many hidden characters `text` holds. */
export function countHidden(text: string): number {
  let n = 0;
  for (const char of text) {
    if (label(char) !== null) {
      n++;
    }
  }
  return n;
}

/** `text` with each hidden character replaced by its plain-text badge. */
export function plainVisible(text: string): string {
  let out = '';
  for (const char of text) {
    out += label(char) !== null ? badgeText(char) : char;
  }
  return out;
}

function badge(char: string): HTMLElement {
  const span = document.createElement('span');
  span.className = 'agentik-invisible';
  span.textContent = badgeText(char);
  span.title = NAMES[label(char) ?? ''] ?? badgeText(char).slice(1, -1);
  return span;
}

/** Append `text` to `node` as text, each hidden character as a badge; returns how many there were. */
export function appendVisible(node: HTMLElement, text: string): number {
  let run = '';
  let n = 0;
  for (const char of text) {
    if (label(char) === null) {
      run += char;
      continue;
    }
    if (run) {
      node.append(run);
      run = '';
    }
    node.appendChild(badge(char));
    n++;
  }
  if (run) {
    node.append(run);
  }
  return n;
}

/** The warning line above `text` when it holds hidden characters, or null when it holds none. */
export function warning(text: string, what = 'This code'): HTMLElement | null {
  const count = countHidden(text);
  if (count === 0) {
    return null;
  }
  const first = [...text].find(char => label(char) !== null) ?? '';
  const node = document.createElement('div');
  node.className = 'agentik-invisible-warning';
  node.setAttribute('role', 'alert');
  const noun = count === 1 ? 'character' : 'characters';
  const verb = what.toLowerCase().startsWith('this') ? 'contains' : 'contain';
  node.textContent =
    `⚠ ${what} ${verb} ${count} invisible or direction-changing ${noun}, shown as badges like ${badgeText(first)}. ` +
    'What runs may differ from how it reads elsewhere.';
  return node;
}

/** Lines as an editor numbers them: '1 line', '240 lines'. */
export function linesText(text: string): string {
  const n = text === '' ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  return `${n.toLocaleString('en-US')} line${n === 1 ? '' : 's'}`;
}

/** Replace each hidden character in the text under `root` (sanitised markup) by its badge; returns how many. */
export function badgeTextNodes(root: Element): number {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const texts: Text[] = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (countHidden(node.nodeValue ?? '') > 0) {
      texts.push(node as Text);
    }
  }
  let n = 0;
  for (const text of texts) {
    const holder = document.createElement('span');
    n += appendVisible(holder, text.nodeValue ?? '');
    text.replaceWith(...Array.from(holder.childNodes));
  }
  return n;
}
