/**
 * The "Agent sessions" sidebar: the saved sessions of the current notebook and,
 * for the one clicked, its history, newest page first, with "Load earlier".
 */
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import {
  fetchHistory,
  HistoryRecord,
  IHistoryEntry,
  ISessionInfo,
  IToolCall,
  IToolEntry,
  listSessions,
  TranscriptEntry
} from './api';
import { el, RenderContext, renderEntries } from './renderer';

const PAGE_SIZE = 50;
const PREVIEW_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'text/html'];

export const agentIcon = new LabIcon({
  name: 'agentik-jupyter:agent',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">' +
    '<path class="jp-icon3" fill="#616161" d="M4 3h16a2 2 0 0 1 2 2v11a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V5' +
    'a2 2 0 0 1 2-2zm3 6.5a1.5 1.5 0 1 0 0 .01zm5 0a1.5 1.5 0 1 0 0 .01zm5 0a1.5 1.5 0 1 0 0 .01z"/></svg>'
});

function resultText(value: unknown): string {
  if (value === null || value === undefined) {
    return '';
  }
  return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
}

function displayPayload(display: Record<string, unknown> | null | undefined): Record<string, string> | null {
  const kept = Object.entries(display ?? {}).filter(
    ([mime, data]) => PREVIEW_TYPES.includes(mime) && typeof data === 'string'
  );
  return kept.length ? (Object.fromEntries(kept) as Record<string, string>) : null;
}

/** Audit-log records -> transcript entries: each tool call one card, its result filled in. */
export function historyEntries(records: HistoryRecord[]): TranscriptEntry[] {
  const entries: TranscriptEntry[] = [];
  const tools = new Map<string, IToolEntry>();
  const card = (call: IToolCall): IToolEntry => {
    let tool = tools.get(call.id);
    if (!tool) {
      tool = { role: 'tool', id: call.id, name: call.name, args: call.args ?? {}, result: null, error: null };
      tools.set(call.id, tool);
      entries.push(tool);
    }
    return tool;
  };
  for (const record of records) {
    switch (record.kind) {
      case 'user':
        entries.push({ role: 'user', content: record.content });
        break;
      case 'assistant':
        if (record.content) {
          entries.push({ role: 'assistant', content: record.content });
        }
        (record.tool_calls ?? []).forEach(card);
        break;
      case 'tool_call':
        card(record.call);
        break;
      case 'tool_result': {
        const r = record.result;
        Object.assign(card({ id: r.tool_call_id, name: r.name }), {
          result: r.error ? null : resultText(r.result),
          error: r.error ?? null,
          duration_ms: r.duration_ms ?? null,
          display: displayPayload(r.display)
        });
        break;
      }
      case 'error':
        entries.push({ role: 'error', message: record.message, code: record.code ?? null });
        break;
    }
  }
  return entries;
}

function turns(page: IHistoryEntry[]): IHistoryEntry[][] {
  const grouped: IHistoryEntry[][] = [];
  for (const entry of page) {
    const last = grouped[grouped.length - 1];
    if (last && last[0].turn_id === entry.turn_id) {
      last.push(entry);
    } else {
      grouped.push([entry]);
    }
  }
  return grouped;
}

function when(seconds: number): string {
  return new Date(seconds * 1000).toLocaleString();
}

function button(label: string, className: string, onClick: () => void): HTMLButtonElement {
  const node = el('button', `jp-Button ${className}`, label) as HTMLButtonElement;
  node.type = 'button';
  node.addEventListener('click', onClick);
  return node;
}

export class SessionsSidebar extends Widget {
  private notebookPath: string | null = null;
  private session: ISessionInfo | null = null;
  private before: number | null = null;
  private stale = true;
  private generation = 0;
  private readonly where = el('div', 'agentik-sidebar-notebook');
  private readonly body = el('div', 'agentik-sidebar-body');

  constructor(private readonly ctx: RenderContext) {
    super();
    this.id = 'agentik-sessions';
    this.title.icon = agentIcon;
    this.title.caption = 'Agent sessions';
    this.addClass('jp-AgentikSidebar');
    const header = el('div', 'agentik-sidebar-header');
    const refresh = button('↻', 'agentik-refresh', () => void this.refresh());
    refresh.title = 'Refresh';
    header.append(el('h2', '', 'Agent sessions'), refresh);
    this.node.append(header, this.where, this.body);
  }

  /** Follow the notebook in the current notebook panel (null: none open). */
  setNotebook(path: string | null): void {
    if (path === this.notebookPath) {
      return;
    }
    this.notebookPath = path;
    this.session = null;
    this.stale = true;
    if (this.isVisible) {
      void this.refresh();
    }
  }

  protected onAfterShow(): void {
    if (this.stale) {
      void this.refresh();
    }
  }

  /** Reload what is shown: the session list, or the open session's latest page. */
  async refresh(): Promise<void> {
    this.stale = false;
    this.where.textContent = this.notebookPath ?? '';
    if (this.session) {
      await this.openSession(this.session);
    } else {
      await this.showSessions();
    }
  }

  private message(text: string, className = 'agentik-empty'): void {
    this.body.replaceChildren(el('p', className, text));
  }

  private async load<T>(fetch: () => Promise<T>): Promise<T | null> {
    const generation = ++this.generation;
    try {
      const value = await fetch();
      return generation === this.generation ? value : null;
    } catch (error) {
      if (generation === this.generation) {
        this.message(`Could not load: ${(error as Error).message}`, 'agentik-error');
      }
      return null;
    }
  }

  private async showSessions(): Promise<void> {
    const path = this.notebookPath;
    if (!path) {
      this.message('Open a notebook to see its agent sessions.');
      return;
    }
    const sessions = await this.load(() => listSessions(path));
    if (sessions === null) {
      return;
    }
    if (!sessions.length) {
      this.message('No saved sessions for this notebook yet: ask in a %%agent cell.');
      return;
    }
    const list = el('ul', 'agentik-session-list');
    for (const session of sessions) {
      const item = el('li');
      const open = button('', 'agentik-session', () => void this.openSession(session));
      open.append(
        el('span', 'agentik-session-title', session.title || 'Untitled session'),
        el('span', 'agentik-session-meta', `${session.message_count} messages · ${when(session.updated_at)}`)
      );
      item.appendChild(open);
      list.appendChild(item);
    }
    this.body.replaceChildren(list);
  }

  private async openSession(session: ISessionInfo): Promise<void> {
    const path = this.notebookPath;
    if (!path) {
      return;
    }
    this.session = session;
    const page = await this.load(() => fetchHistory(path, session.id, PAGE_SIZE, null));
    if (page === null) {
      return;
    }
    const back = button('‹ All sessions', 'agentik-back', () => {
      this.session = null;
      void this.showSessions();
    });
    const earlier = button('Load earlier', 'agentik-load-earlier', () => void this.loadEarlier(earlier, history));
    const history = el('div', 'jp-AgentikTranscript agentik-history');
    const nav = el('div', 'agentik-session-nav');
    nav.append(back, el('h3', 'agentik-session-heading', session.title || 'Untitled session'));
    this.body.replaceChildren(nav, earlier, history);
    await this.addPage(history, page.entries, page.next_before_seq, earlier);
    history.lastElementChild?.scrollIntoView({ block: 'end' });
  }

  private async loadEarlier(earlier: HTMLButtonElement, history: HTMLElement): Promise<void> {
    const path = this.notebookPath;
    if (!path || !this.session || this.before === null) {
      return;
    }
    const { id } = this.session;
    const before = this.before;
    earlier.disabled = true;
    const page = await this.load(() => fetchHistory(path, id, PAGE_SIZE, before));
    earlier.disabled = false;
    if (page !== null) {
      await this.addPage(history, page.entries, page.next_before_seq, earlier);
    }
  }

  /** Put a page above what is shown (pages arrive newest first, each oldest first). */
  private async addPage(
    history: HTMLElement,
    page: IHistoryEntry[],
    before: number | null,
    earlier: HTMLButtonElement
  ): Promise<void> {
    const nodes: HTMLElement[] = [];
    for (const turn of turns(page)) {
      const node = el('div', 'agentik-turn');
      node.dataset.turnId = turn[0].turn_id;
      node.appendChild(el('div', 'agentik-turn-time', when(turn[0].created_at)));
      node.append(...(await renderEntries(historyEntries(turn.map(e => e.record)), this.ctx)));
      nodes.push(node);
    }
    history.prepend(...nodes);
    this.before = before;
    earlier.hidden = before === null;
  }
}
