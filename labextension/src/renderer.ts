/**
 * The transcript of a finished `%%agent` turn, drawn from its
 * `application/vnd.agentik.transcript+json` payload.
 *
 * Every string in the payload is untrusted. Text goes in as text; the answer's
 * Markdown has its raw HTML escaped (shown as text, as the widgets do) and goes
 * through JupyterLab's renderMarkdown as untrusted source, so the application's
 * sanitizer cleans it; then images become links and an allow-list (safehtml.ts)
 * keeps no attribute that loads a URL, so that a transcript cannot make the
 * browser fetch anything by itself. Tool previews (`display["text/html"]`) pass
 * the same sanitizer and allow-list. A tool card's arguments and results show invisible or
 * direction-changing characters as badges under a warning (invisible.ts).
 */
import { IRenderMime, renderHTML, renderMarkdown } from '@jupyterlab/rendermime';
import { Widget } from '@lumino/widgets';

import { ITranscript, IToolEntry, IUsage, TRANSCRIPT_MIME, TranscriptEntry } from './api';
import { appendVisible, badgeTextNodes, plainVisible, warning } from './invisible';
import { planCard } from './plan';
import { allowListed, escapeRawHtml } from './safehtml';

/** What rendering Markdown needs: the renderer options or the rendermime registry both fit. */
export type RenderContext = Pick<
  IRenderMime.IRendererOptions,
  'sanitizer' | 'resolver' | 'linkHandler' | 'latexTypesetter' | 'markdownParser'
>;

/** A stopped turn, in the same words wherever it shows (agentik_jupyter/widgets/status.py STOPPED). */
const STOPPED = '■ Stopped';
const ENDINGS: Record<string, string> = {
  complete: '✓ Done',
  max_iterations: '■ Stopped at the tool-call limit',
  interrupted: STOPPED,
  error: '⚠ Failed'
};
/** A rewound turn's footer mark (agentik_jupyter/widgets/transcript.py REWOUND_MARK). */
const REWOUND = '↶ Rewound';
/** The code of the record a rewind leaves (agentik_jupyter/persistence/rewind.py REWOUND_CODE). */
const REWOUND_CODE = 'rewound';
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif'];
const BASE64 = /^[A-Za-z0-9+/=\s]*$/;
const IMG_TAG = /<img\b[^>]*>/gi;
const SAFE_LINK = /^(https?:|mailto:)/i;
const TITLE_ARGS_LIMIT = 60;
/** An answer's classes wherever it shows (transcript, live text, panel: widgets/shared.py ANSWER_CLASSES). */
export const ANSWER_CLASSES = 'agentik-assistant jp-RenderedHTMLCommon jp-RenderedMarkdown';

export function el(tag: string, className = '', text?: string): HTMLElement {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

function attribute(tag: string, name: string): string {
  const match = new RegExp(`\\s${name}="([^"]*)"`, 'i').exec(tag);
  return match ? match[1] : '';
}

/** Sanitised HTML (attributes quoted and escaped) with each <img> turned into a link or its alt text. */
function imagesAsLinks(html: string): string {
  return html.replace(IMG_TAG, tag => {
    const src = attribute(tag, 'src');
    const alt = attribute(tag, 'alt') || src;
    if (!SAFE_LINK.test(src)) {
      return alt;
    }
    return `<a href="${src}" target="_blank" rel="noopener noreferrer nofollow">Image: ${alt}</a>`;
  });
}

function noImagesSanitizer(base: IRenderMime.ISanitizer): IRenderMime.ISanitizer {
  return {
    sanitize: (dirty, options) => allowListed(imagesAsLinks(base.sanitize(dirty, options))),
    getAutolink: () => base.getAutolink?.() ?? false,
    allowNamedProperties: base.allowNamedProperties
  };
}

async function markdown(source: string, ctx: RenderContext): Promise<HTMLElement> {
  const host = el('div', ANSWER_CLASSES);
  if (!ctx.markdownParser) {
    host.appendChild(el('pre', '', source));
    return host;
  }
  await renderMarkdown({
    host,
    source: escapeRawHtml(source),
    trusted: false,
    sanitizer: noImagesSanitizer(ctx.sanitizer),
    resolver: ctx.resolver ?? null,
    linkHandler: ctx.linkHandler ?? null,
    latexTypesetter: ctx.latexTypesetter ?? null,
    markdownParser: ctx.markdownParser,
    shouldTypeset: true
  });
  return host;
}

/**
 * An answer's HTML, element `data-agentik-entry=<index>` of the bundle's text/html: a saved turn
 * keeps every answer longer than its JSON start once, there (`in_html`), rendered by the kernel as
 * the live view showed it. Parsed in an inert <template> (nothing loads, as in
 * safehtml.ts); the markup is untrusted and goes through the same sanitizer and allow-list as Markdown.
 */
async function answerFromHtml(bundleHtml: string, index: number, ctx: RenderContext): Promise<HTMLElement | null> {
  const template = document.createElement('template');
  template.innerHTML = bundleHtml;
  const part = template.content.querySelector(`.agentik-assistant[data-agentik-entry="${index}"]`);
  if (!part) {
    return null;
  }
  const host = el('div', ANSWER_CLASSES);
  await renderHTML({
    host,
    source: part.innerHTML,
    trusted: false,
    sanitizer: noImagesSanitizer(ctx.sanitizer),
    resolver: ctx.resolver ?? null,
    linkHandler: ctx.linkHandler ?? null,
    latexTypesetter: ctx.latexTypesetter ?? null,
    shouldTypeset: true
  });
  return host;
}

function argsSummary(args: Record<string, unknown>): string {
  const inner = plainVisible(Object.entries(args)
    .map(([key, value]) => `${key}=${JSON.stringify(value)}`)
    .join(', '));
  return inner.length <= TITLE_ARGS_LIMIT ? inner : inner.slice(0, TITLE_ARGS_LIMIT - 1) + '…';
}

/** How a rejected edit's result begins (agentik_jupyter/notebook/edits.py REJECTED): its card says so, not ✓. */
const REJECTED = 'The user rejected the edit';

/** The result of a call a Stop cut short (agentik_jupyter/core/orchestrator.py STOPPED_CALL). */
const STOPPED_CALL = 'Interrupted by the user.';

function cardTitle(tool: IToolEntry): string {
  const head = `${tool.name}(${argsSummary(tool.args ?? {})})`;
  if (tool.error === STOPPED_CALL) {
    return `■ ${head} · stopped`;
  }
  if (tool.error !== null && tool.error !== undefined) {
    return `✗ ${head} · error`;
  }
  if (tool.result === null || tool.result === undefined) {
    return `⚙ ${head} · no result`;
  }
  const ms = typeof tool.duration_ms === 'number' ? ` · ${Math.round(tool.duration_ms).toLocaleString()} ms` : '';
  if (typeof tool.result === 'string' && tool.result.startsWith(REJECTED)) {
    return `⊘ ${head} · rejected${ms}`;
  }
  return `✓ ${head}${ms}`;
}

function preview(display: Record<string, string> | null | undefined, ctx: RenderContext): HTMLElement | null {
  if (!display) {
    return null;
  }
  for (const mime of IMAGE_TYPES) {
    const data = display[mime];
    if (typeof data === 'string' && BASE64.test(data)) {
      const img = el('img', 'agentik-image') as HTMLImageElement;
      img.alt = 'tool image';
      img.src = `data:${mime};base64,${data.replace(/\s/g, '')}`;
      return img;
    }
  }
  const markup = display['text/html'];
  if (typeof markup === 'string') {
    const host = el('div', 'agentik-preview jp-RenderedHTMLCommon');
    host.innerHTML = noImagesSanitizer(ctx.sanitizer).sanitize(markup);
    badgeTextNodes(host);
    return host;
  }
  return null;
}

/** Text in a <pre>, each hidden character as a badge. */
function visiblePre(text: string, className = ''): HTMLElement {
  const pre = el('pre', className);
  appendVisible(pre, text);
  return pre;
}

function section(label: string, text: string, className = ''): HTMLElement[] {
  return [el('div', 'agentik-label', label), visiblePre(text, className)];
}

/** Arguments that hold code (agentik_jupyter/widgets/cards.py CODE_ARGS): shown as code, not as a JSON string. */
const CODE_ARGS = ['code', 'source', 'new_source'];

/** The arguments as the kernel's card shows them: code and text of several lines each in a block of
 * its own (as one JSON line its line breaks would read as \n), the others as JSON. */
function argumentNodes(args: Record<string, unknown>): HTMLElement[] {
  const blocks = Object.entries(args).filter(
    (entry): entry is [string, string] =>
      typeof entry[1] === 'string' && (CODE_ARGS.includes(entry[0]) || entry[1].includes('\n'))
  );
  const named = new Set(blocks.map(([key]) => key));
  const rest = Object.fromEntries(Object.entries(args).filter(([key]) => !named.has(key)));
  const nodes = [el('div', 'agentik-label', 'Arguments')];
  if (Object.keys(rest).length || !blocks.length) {
    nodes.push(visiblePre(JSON.stringify(rest, null, 2)));
  }
  for (const [key, text] of blocks) {
    const label = el('div');
    label.appendChild(el('code', '', key));
    const pre = visiblePre(text, 'agentik-code');
    pre.dataset.arg = key;
    nodes.push(label, pre);
  }
  return nodes;
}

function toolCard(tool: IToolEntry, ctx: RenderContext): HTMLElement {
  const card = el('details', 'agentik-tool');
  card.appendChild(el('summary', '', cardTitle(tool)));
  const args = JSON.stringify(tool.args ?? {}, null, 2);
  const hidden = warning([args, tool.error ?? '', tool.result ?? ''].join('\n'), 'This tool call');
  if (hidden) {
    card.appendChild(hidden);
  }
  card.append(...argumentNodes(tool.args ?? {}));
  if (tool.error !== null && tool.error !== undefined) {
    card.append(...section('Error', tool.error, 'agentik-error'));
  } else if (tool.result !== null && tool.result !== undefined) {
    const rich = preview(tool.display, ctx);
    if (rich) {
      card.append(el('div', 'agentik-label', 'Result'), rich);
      const sent = el('details', 'agentik-sent');
      sent.append(el('summary', '', 'Text sent to the model'), visiblePre(tool.result));
      card.appendChild(sent);
    } else {
      card.append(...section('Result', tool.result || '(no output)'));
    }
    if (tool.truncated) {
      card.appendChild(el('div', 'agentik-cut', `… ${tool.truncated.toLocaleString()} more characters not shown`));
    }
  } else {
    card.appendChild(el('div', 'agentik-cut', 'No result was recorded.'));
  }
  return card;
}

/**
 * One node per entry, in order: question, answer, tool card, plan card, error. `bundleHtml` is the bundle's
 * text/html, where a saved transcript keeps its answers (`in_html`); an answer saved whole in the
 * JSON (a short one, or any answer of a notebook saved before) is rendered from its Markdown.
 */
export async function renderEntries(
  entries: TranscriptEntry[],
  ctx: RenderContext,
  bundleHtml = ''
): Promise<HTMLElement[]> {
  return Promise.all(
    entries.map(async (entry, index) => {
      switch (entry.role) {
        case 'user': {
          const node = el('div', 'agentik-user');
          const who = el('span', 'agentik-who', 'You');
          if (typeof entry.mode === 'string' && entry.mode) {
            who.append(' ', el('span', 'agentik-mode', `· ${entry.mode}`)); // as the live header says it
          }
          node.append(who, el('div', 'agentik-question', entry.content));
          return node;
        }
        case 'assistant': {
          const whole = entry.in_html && bundleHtml ? await answerFromHtml(bundleHtml, index, ctx) : null;
          return whole ?? markdown(entry.content, ctx);
        }
        case 'tool':
          return toolCard(entry, ctx);
        case 'plan':
          return planCard(entry);
        case 'notice':
          return el('div', 'agentik-notice', entry.message);
        default:
          // code "notice": news such as a compaction, not a failure; "interrupted": the user's Stop;
          // "rewound": a rewind the user asked for, marked as the live panel marks it (widgets/panel.py)
          if (entry.code === 'interrupted') {
            return el('div', 'agentik-stopped', STOPPED);
          }
          if (entry.code === REWOUND_CODE) {
            return el('div', 'agentik-rewound', `↶ ${entry.message}`);
          }
          return entry.code === 'notice'
            ? el('div', 'agentik-notice', entry.message)
            : el('div', 'agentik-error', `⚠ ${entry.message}`);
      }
    })
  );
}

function usageText(usage: IUsage | null | undefined): string {
  if (!usage || (usage.input_tokens == null && usage.output_tokens == null)) {
    return '';
  }
  const n = (value: number | null | undefined): string => (value ?? 0).toLocaleString();
  const cached = usage.cached_tokens == null ? '' : `, ${n(usage.cached_tokens)} from cache`;
  return `${n(usage.input_tokens)} tokens in${cached}, ${n(usage.output_tokens)} out`;
}

/** How the turn ended; a turn that finished after a tool failed says so, not "Done" (as the kernel's text does). */
function endingText(transcript: ITranscript): string {
  const failed = typeof transcript.failed_tools === 'number' ? transcript.failed_tools : 0;
  if (transcript.status === 'complete' && failed > 0) {
    return `⚠ Finished with ${failed} failed tool call${failed > 1 ? 's' : ''}`;
  }
  return ENDINGS[transcript.status ?? ''] ?? '';
}

function statusText(transcript: ITranscript): string {
  const elapsed = typeof transcript.elapsed_s === 'number' ? `${transcript.elapsed_s.toFixed(1)} s` : '';
  const rewound = transcript.rewound === true ? REWOUND : '';
  return [endingText(transcript), rewound, elapsed, usageText(transcript.usage)].filter(Boolean).join(' · ');
}

export class TranscriptRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(private readonly ctx: RenderContext) {
    super();
    this.addClass('jp-AgentikTranscript');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const transcript = model.data[TRANSCRIPT_MIME] as unknown as ITranscript | undefined;
    this.node.replaceChildren();
    if (!transcript || !Array.isArray(transcript.entries)) {
      this.node.appendChild(el('div', 'agentik-error', 'This agent transcript could not be read.'));
      return;
    }
    if (transcript.title) {
      this.node.appendChild(el('div', 'agentik-title', transcript.title));
    }
    const html = model.data['text/html'];
    const bundleHtml = typeof html === 'string' ? html : Array.isArray(html) ? html.join('') : '';
    this.node.append(...(await renderEntries(transcript.entries, this.ctx, bundleHtml)));
    const status = statusText(transcript);
    if (status) {
      this.node.appendChild(el('div', 'agentik-status', status));
    }
  }
}

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [TRANSCRIPT_MIME],
  defaultRank: 40,
  createRenderer: options => new TranscriptRenderer(options)
};

const extension: IRenderMime.IExtension = {
  id: 'agentik-jupyter:transcript',
  description: 'Renders agentik_jupyter turn transcripts in notebook outputs.',
  rendererFactory,
  rank: 40,
  dataType: 'json'
};

export default extension;
