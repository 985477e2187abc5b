/**
 * An allow-list applied after JupyterLab's sanitiser, so that a transcript
 * never makes the browser contact a host by itself.
 *
 * The sanitiser removes scripts and handlers but keeps attributes that load
 * URLs (`poster`, `srcset`, `background`, `style="background-image:url(…)"`,
 * `<input type=image src>`, `<audio src autoplay>`). Naming what to remove
 * always misses the next one, so here only known elements and attributes stay:
 * links (followed only on a click), and images only as base64 `data:image/*`.
 * Styles keep a few plain declarations whose values cannot hold a URL.
 *
 * The answer's Markdown is also pre-escaped: raw HTML in it is shown as text,
 * as the widgets do (markdown-it with `html=False`).
 */

/** Elements kept (others are unwrapped: their text stays, the element goes). */
const ALLOWED_TAGS = new Set([
  'a', 'abbr', 'b', 'blockquote', 'br', 'caption', 'code', 'col', 'colgroup', 'dd', 'del', 'details',
  'div', 'dl', 'dt', 'em', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'i', 'img', 'ins', 'kbd', 'li',
  'mark', 'ol', 'p', 'pre', 's', 'samp', 'small', 'span', 'strong', 'sub', 'summary', 'sup', 'table',
  'tbody', 'td', 'tfoot', 'th', 'thead', 'tr', 'u', 'ul', 'var'
]);
/** Elements removed with everything inside: they embed, load or run something. */
const DROPPED_TAGS = new Set([
  'applet', 'audio', 'base', 'embed', 'form', 'frame', 'frameset', 'iframe', 'image', 'input', 'link',
  'math', 'meta', 'noscript', 'object', 'picture', 'portal', 'script', 'source', 'style', 'svg',
  'template', 'track', 'video'
]);
/** Attributes kept on any allowed element: none of them names a URL. */
const GLOBAL_ATTRIBUTES = new Set([
  'align', 'class', 'colspan', 'dir', 'id', 'lang', 'open', 'rowspan', 'scope', 'span', 'start',
  'style', 'title', 'valign', 'reversed'
]);
const ELEMENT_ATTRIBUTES: Record<string, Set<string>> = {
  a: new Set(['href', 'target', 'rel']),
  img: new Set(['src', 'alt', 'width', 'height']),
  ol: new Set(['type']),
  td: new Set(['width']),
  th: new Set(['width'])
};
const SAFE_HREF = /^(https?:|mailto:|#)/i;
const DATA_IMAGE = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]*$/i;
/** Style declarations kept: a known property with a plain value (no functions, no escapes). */
const STYLE_PROPERTIES = new Set([
  'text-align', 'vertical-align', 'font-weight', 'font-style', 'text-decoration', 'white-space',
  'width', 'min-width', 'max-width', 'color', 'background-color', 'padding', 'margin', 'border'
]);
const PLAIN_STYLE_VALUE = /^[#\w\s.,%-]*$/;

function cleanStyle(style: string): string {
  return style
    .split(';')
    .map(part => part.trim())
    .filter(part => {
      const colon = part.indexOf(':');
      if (colon < 0) {
        return false;
      }
      const name = part.slice(0, colon).trim().toLowerCase();
      const value = part.slice(colon + 1).trim();
      return STYLE_PROPERTIES.has(name) && PLAIN_STYLE_VALUE.test(value);
    })
    .join('; ');
}

function keepAttribute(tag: string, name: string, value: string): string | null {
  if (!(GLOBAL_ATTRIBUTES.has(name) || ELEMENT_ATTRIBUTES[tag]?.has(name))) {
    return null;
  }
  if (name === 'href') {
    return SAFE_HREF.test(value.trim()) ? value : null;
  }
  if (name === 'src') {
    return DATA_IMAGE.test(value.trim()) ? value : null;
  }
  if (name === 'style') {
    return cleanStyle(value) || null;
  }
  return value;
}

function cleanElement(element: Element | DocumentFragment): void {
  for (const child of Array.from(element.children)) {
    const tag = child.localName.toLowerCase();
    if (DROPPED_TAGS.has(tag)) {
      child.remove();
      continue;
    }
    cleanElement(child);
    if (!ALLOWED_TAGS.has(tag)) {
      child.replaceWith(...Array.from(child.childNodes));
      continue;
    }
    for (const attribute of Array.from(child.attributes)) {
      const kept = keepAttribute(tag, attribute.name.toLowerCase(), attribute.value);
      if (kept === null) {
        child.removeAttribute(attribute.name);
      } else if (kept !== attribute.value) {
        child.setAttribute(attribute.name, kept);
      }
    }
    if (tag === 'a' && child.hasAttribute('href')) {
      child.setAttribute('target', '_blank');
      child.setAttribute('rel', 'noopener noreferrer nofollow');
    }
  }
}

/**
 * Sanitised HTML reduced to the allow-list. Parsed, cleaned and serialised inside
 * an inert <template> document: nothing in it loads before it is clean (moving it
 * into the page first would start the fetches).
 */
export function allowListed(html: string): string {
  const template = document.createElement('template');
  template.innerHTML = html;
  cleanElement(template.content);
  return template.innerHTML;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
/** A code span (left as is) or a `<` that does not open an autolink (escaped). */
const RAW_HTML_START = /(`+)[^`]*?\1|<(?!(?:https?:|mailto:)[^\s<>]*>)/g;

/** Markdown whose raw HTML shows as text: `<` is escaped outside code fences, spans and indented code. */
export function escapeRawHtml(source: string): string {
  let fence: string | null = null;
  return source
    .split('\n')
    .map(line => {
      const match = FENCE.exec(line);
      if (fence !== null) {
        if (match && match[1][0] === fence[0] && match[1].length >= fence.length) {
          fence = null;
        }
        return line;
      }
      if (match) {
        fence = match[1];
        return line;
      }
      if (/^( {4}|\t)/.test(line)) {
        return line;
      }
      return line.replace(RAW_HTML_START, (found: string, ticks?: string) => (ticks ? found : '&lt;'));
    })
    .join('\n');
}
