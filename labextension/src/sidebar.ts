/**
 * The "Agent sessions" sidebar: the saved sessions of the current notebook, kept live by
 * the server's events stream (sessions appear, rename and disappear while kernels work),
 * each with Rename, Delete (confirmed) and Continue here; for the one clicked, its history,
 * newest page first, with "Show older". The session the notebook's kernel uses is marked.
 *
 * Ids come from the sessions file, which a project may ship: only session ids are shown or
 * acted on, always as text, and Continue here asks the kernel over the control comm
 * (control.ts), never by running code built from an id.
 */
import { Kernel } from '@jupyterlab/services';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import {
  deleteSession,
  fetchHistory,
  followSessionEvents,
  IHistoryEntry,
  ISessionEvent,
  ISessionInfo,
  listSessionsPage,
  renameSession
} from './api';
import { askKernel, isSessionId, loadThenRetry, NotLoadedError } from './control';
import { historyEntries, prependPage, turns } from './history';
import { el, RenderContext, renderEntries } from './renderer';

const PAGE_SIZE = 50;
const LIST_PAGE_SIZE = 100;
const REFRESH_DELAY_MS = 100;
const ACTIVE_TIMEOUT_MS = 3000;
const ACTIVE_CLASS = 'agentik-active';

export const agentIcon = new LabIcon({
  name: 'agentik-jupyter:agent',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">' +
    '<path class="jp-icon3" fill="#616161" d="M4 3h16a2 2 0 0 1 2 2v11a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V5' +
    'a2 2 0 0 1 2-2zm3 6.5a1.5 1.5 0 1 0 0 .01zm5 0a1.5 1.5 0 1 0 0 .01zm5 0a1.5 1.5 0 1 0 0 .01z"/></svg>'
});

const MODE_LABELS: Record<string, string> = { ask: 'Ask', agent: 'Agent', auto: 'Auto', plan: 'Plan' };

/** The session's mode as the sidebar says it ("Auto · "), or nothing when it never set one. */
function modeText(session: ISessionInfo): string {
  const label = session.mode ? MODE_LABELS[session.mode] : undefined;
  return label ? `${label} · ` : '';
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

/** The notebook's kernel, when it has one (read at click time: kernels restart and change). */
export type KernelGetter = () => Kernel.IKernelConnection | null | undefined;

export class SessionsSidebar extends Widget {
  private notebookPath: string | null = null;
  private kernel: KernelGetter = () => null;
  private session: ISessionInfo | null = null;
  private before: number | null = null;
  private shown = LIST_PAGE_SIZE;
  private stale = true;
  private generation = 0;
  private unfollow: (() => void) | null = null;
  private followed: string | null = null;
  private refreshTimer = 0;
  private history: HTMLElement | null = null;
  private readonly rows = new WeakMap<HTMLElement, IHistoryEntry[]>();
  private heading: HTMLElement | null = null;
  private activeId: string | null = null;
  private askingActive = false;
  private readonly where = el('div', 'agentik-sidebar-notebook');
  private readonly note = el('div', 'agentik-sidebar-note');
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
    this.note.hidden = true;
    this.node.append(header, this.where, this.note, this.body);
  }

  /** Follow the notebook in the current notebook panel (null: none open) and its kernel. */
  setNotebook(path: string | null, kernel?: KernelGetter): void {
    this.kernel = kernel ?? (() => null);
    if (path === this.notebookPath) {
      return;
    }
    this.notebookPath = path;
    this.activeId = null;
    this.session = null;
    this.shown = LIST_PAGE_SIZE;
    this.stale = true;
    this.stopFollowing();
    this.say(null);
    if (this.isVisible) {
      void this.refresh();
    }
  }

  dispose(): void {
    this.stopFollowing();
    super.dispose();
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

  private say(text: string | null, ...actions: HTMLElement[]): void {
    this.note.textContent = text ?? '';
    this.note.append(...actions);
    this.note.hidden = !text;
  }

  private message(text: string, className = 'agentik-empty'): void {
    this.history = null;
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

  // ---- live events ----

  private follow(path: string, position: number): void {
    if (this.followed === path) {
      return;
    }
    this.stopFollowing();
    this.followed = path;
    this.unfollow = followSessionEvents(path, position, event => this.onEvent(path, event));
  }

  private stopFollowing(): void {
    this.unfollow?.();
    this.unfollow = null;
    this.followed = null;
    window.clearTimeout(this.refreshTimer);
  }

  private onEvent(path: string, event: ISessionEvent): void {
    if (path !== this.notebookPath || !isSessionId(event.session_id)) {
      return;
    }
    const open = this.session;
    if (!open) {
      this.later(() => this.showSessions());
      return;
    }
    if (event.session_id !== open.id) {
      return;
    }
    if (event.type === 'deleted') {
      this.session = null;
      this.say(`“${open.title || 'Untitled session'}” was deleted.`);
      void this.showSessions();
    } else if (event.type === 'renamed' && this.heading) {
      open.title = event.title ?? null;
      this.heading.textContent = open.title || 'Untitled session';
    } else if (event.type === 'message') {
      this.later(() => this.refreshTail());
    }
  }

  /** Coalesce a burst of events (a streamed turn writes several rows) into one reload. */
  private later(reload: () => Promise<void>): void {
    window.clearTimeout(this.refreshTimer);
    this.refreshTimer = window.setTimeout(() => void reload(), REFRESH_DELAY_MS);
  }

  // ---- the session list ----

  private async showSessions(): Promise<void> {
    const path = this.notebookPath;
    this.history = null;
    this.heading = null;
    if (!path) {
      this.message('Open a notebook to see its agent sessions.');
      return;
    }
    const page = await this.load(() => listSessionsPage(path, 0, this.shown));
    if (page === null || this.session) {
      return;
    }
    this.follow(path, page.position);
    if (!page.sessions.length) {
      this.message('No saved sessions for this notebook yet: ask in a %%agent cell.');
      return;
    }
    const list = el('ul', 'agentik-session-list');
    for (const session of page.sessions.filter(s => isSessionId(s.id))) {
      list.appendChild(this.row(path, session));
    }
    const nodes: HTMLElement[] = [list];
    if (page.hidden) {
      nodes.push(
        el(
          'p',
          'agentik-hidden-sessions',
          `${page.hidden} session(s) in this notebook's sessions file have malformed ids and are not shown.`
        )
      );
    }
    if (page.total > page.sessions.length) {
      nodes.push(
        button(`Show more sessions (${page.total - page.sessions.length} more)`, 'agentik-more-sessions', () => {
          this.shown += LIST_PAGE_SIZE;
          void this.showSessions();
        })
      );
    }
    this.body.replaceChildren(...nodes);
    this.markActive();
    void this.askActive();
  }

  // ---- the session the kernel uses ----

  /** Ask the kernel which session it continues (one question at a time; no answer, no mark). */
  private async askActive(): Promise<void> {
    const kernel = this.kernel();
    if (!kernel || this.askingActive) {
      return;
    }
    this.askingActive = true;
    try {
      const answer = await askKernel(kernel, { action: 'active' }, ACTIVE_TIMEOUT_MS);
      if (answer.ok && kernel === this.kernel()) {
        this.activeId = answer.id ?? null;
        this.markActive();
      }
    } catch {
      // no agentik in the kernel, or busy: nothing to mark
    } finally {
      this.askingActive = false;
    }
  }

  /** Mark the row of the active session (class agentik-active and a visible "active" label). */
  private markActive(): void {
    for (const item of Array.from(this.body.querySelectorAll<HTMLElement>('li.agentik-session-row'))) {
      const active = this.activeId !== null && item.dataset.sessionId === this.activeId;
      item.classList.toggle(ACTIVE_CLASS, active);
      const label = item.querySelector('.agentik-active-label');
      if (active && !label) {
        const mark = el('span', 'agentik-active-label', 'active');
        mark.title = 'This notebook\u2019s kernel continues this session';
        item.querySelector('.agentik-session-title')?.after(mark);
      } else if (!active && label) {
        label.remove();
      }
    }
  }

  private row(path: string, session: ISessionInfo): HTMLElement {
    const item = el('li', 'agentik-session-row');
    item.dataset.sessionId = session.id;
    const label = session.title || 'Untitled session';
    const open = button('', 'agentik-session', () => void this.openSession(session));
    open.append(
      el('span', 'agentik-session-title', label),
      el(
        'span',
        'agentik-session-meta',
        `${session.message_count} messages · ${modeText(session)}${when(session.updated_at)}`
      )
    );
    const actions = el('div', 'agentik-session-actions');
    const rename = button('Rename', 'agentik-rename', () => this.startRename(path, session, item));
    const remove = button('Delete', 'agentik-delete', () => this.confirmDelete(path, session, item));
    const resume = button('Continue here', 'agentik-continue', () => void this.continueHere(session));
    rename.title = `Rename “${label}”`;
    remove.title = `Delete “${label}” and its messages`;
    resume.title = 'Continue this session in this notebook\u2019s kernel';
    actions.append(rename, remove, resume);
    item.append(open, actions);
    return item;
  }

  private startRename(path: string, session: ISessionInfo, item: HTMLElement): void {
    const form = el('form', 'agentik-rename-form') as HTMLFormElement;
    const input = document.createElement('input');
    input.className = 'jp-mod-styled agentik-rename-input';
    input.value = session.title ?? '';
    input.setAttribute('aria-label', 'New session title');
    const save = button('Save', 'agentik-rename-save', () => form.requestSubmit());
    const cancel = button('Cancel', 'agentik-rename-cancel', () => void this.showSessions());
    save.type = 'submit';
    form.append(input, save, cancel);
    form.addEventListener('submit', event => {
      event.preventDefault();
      void this.act(() => renameSession(path, session.id, input.value));
    });
    input.addEventListener('keydown', event => {
      if (event.key === 'Escape') {
        void this.showSessions();
      }
    });
    item.replaceChildren(form);
    input.focus();
    input.select();
  }

  private confirmDelete(path: string, session: ISessionInfo, item: HTMLElement): void {
    const box = el('div', 'agentik-confirm');
    const inUse = session.id === this.activeId ? ' The notebook\u2019s kernel uses it: its next turn starts a new session.' : '';
    box.append(
      el('span', 'agentik-confirm-text', `Delete “${session.title || 'Untitled session'}” and its messages?${inUse}`),
      button('Delete session', 'agentik-confirm-delete jp-mod-warn', () =>
        void this.act(() => deleteSession(path, session.id))
      ),
      button('Cancel', 'agentik-confirm-cancel', () => void this.showSessions())
    );
    item.replaceChildren(box);
  }

  private async act(change: () => Promise<unknown>): Promise<void> {
    try {
      await change();
      this.say(null);
    } catch (error) {
      this.say(`Could not change the session: ${(error as Error).message}`);
    }
    await this.showSessions();
  }

  /** Resume the session in the notebook's kernel over the control comm: the id is data there. */
  private async continueHere(session: ISessionInfo): Promise<void> {
    const kernel = this.kernel();
    const label = session.title || 'Untitled session';
    if (!isSessionId(session.id)) {
      this.say('This session has a malformed id: it cannot be continued.');
      return;
    }
    if (!kernel) {
      this.say('This notebook has no running kernel: start one, then continue the session.');
      return;
    }
    this.say(`Continuing “${label}”…`);
    try {
      const answer = await askKernel(kernel, { action: 'resume', id: session.id });
      if (!answer.ok) {
        this.say(`Could not continue “${label}”: ${answer.error ?? 'the kernel refused'}`);
        return;
      }
      this.activeId = answer.id ?? session.id;
      this.markActive();
      this.say(`The next %%agent cell continues “${label}”.`);
    } catch (error) {
      if (error instanceof NotLoadedError) {
        const load = loadThenRetry(() => this.kernel(), '', () => this.continueHere(session), text => this.say(text));
        this.say(`${error.message} `, load);
      } else {
        this.say(`Could not continue “${label}”: ${(error as Error).message}`);
      }
    }
  }

  // ---- one session's history ----

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
    const older = button('Show older', 'agentik-load-earlier', () => void this.loadEarlier(older, history));
    const history = el('div', 'jp-AgentikTranscript agentik-history');
    const nav = el('div', 'agentik-session-nav');
    this.heading = el('h3', 'agentik-session-heading', page.session?.title || session.title || 'Untitled session');
    nav.append(back, this.heading);
    this.body.replaceChildren(nav, older, history);
    this.history = history;
    await this.addPage(history, page.entries, page.next_before_seq, older);
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

  /** New rows of the open session: redraw its last turn (it may have grown) and add the rest. */
  private async refreshTail(): Promise<void> {
    const path = this.notebookPath;
    const history = this.history;
    const session = this.session;
    if (!path || !history || !session) {
      return;
    }
    const last = history.lastElementChild as HTMLElement | null;
    const from = last ? Number(last.dataset.firstSeq) - 1 : 0;
    const page = await fetchHistory(path, session.id, PAGE_SIZE, null, from).catch(() => null);
    if (!page || history !== this.history || !page.entries.length) {
      return;
    }
    last?.remove();
    history.append(...(await this.turnNodes(page.entries)));
    history.lastElementChild?.scrollIntoView({ block: 'end' });
  }

  private async turnNodes(page: IHistoryEntry[]): Promise<HTMLElement[]> {
    const nodes: HTMLElement[] = [];
    for (const turn of turns(page)) {
      const node = el('div', 'agentik-turn');
      node.dataset.turnId = turn[0].turn_id;
      node.dataset.firstSeq = String(turn[0].seq);
      node.appendChild(el('div', 'agentik-turn-time', when(turn[0].created_at)));
      node.append(...(await renderEntries(historyEntries(turn.map(e => e.record)), this.ctx)));
      this.rows.set(node, turn);
      nodes.push(node);
    }
    return nodes;
  }

  /**
   * Put a page above what is shown (pages arrive newest first, each oldest first). A page
   * cut by row count may end inside the turn shown first: that turn is drawn again, whole,
   * so its tool calls meet their results and nothing appears twice.
   */
  private async addPage(
    history: HTMLElement,
    page: IHistoryEntry[],
    before: number | null,
    earlier: HTMLButtonElement
  ): Promise<void> {
    const first = history.firstElementChild as HTMLElement | null;
    const { entries, replaces } = prependPage(page, first?.dataset.turnId, first ? this.rows.get(first) : undefined);
    const nodes = await this.turnNodes(entries);
    if (replaces && first) {
      first.remove();
    }
    history.prepend(...nodes);
    this.before = before;
    earlier.hidden = before === null;
  }
}
