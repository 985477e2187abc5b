/**
 * The live notebook for the agent: its cells on request, and edits shown as diffs on the cell.
 *
 * The kernel opens a comm to `agentik.notebook` per request (agentik_jupyter/notebook/requests.py);
 * this answers by opening `agentik.notebook.reply` with the request id. `read` answers the
 * document as the editor holds it (unsaved edits included). `edit_cell` / `delete_cell` answer
 * `stale` when the cell no longer holds the source the agent read, else show the change on the
 * cell with Accept / Reject / Accept and run, answer `shown`, and then the user's decision. A cell
 * that changed while its diff waited is never overwritten: Accept says so and shows the same change
 * against the cell's new text, for the user to accept or reject.
 * Nothing changes before Accept; a request the kernel closes (Stop, timeout) takes its diff away.
 * `insert_cell` puts a proposed cell below the asking one (cells.ts) and answers its id;
 * `run_cells` re-runs cells in order (the fix loop's dependent cells, after the user approved
 * in the kernel) and answers each one's outputs, stopping at the first that fails.
 * `revert_cells` (`%agent rewind`) puts back the old source of cells the agent edited and removes
 * the cells it inserted, each only if the user has not changed it since, and puts back the cells it
 * deleted (source and type, below the cell that was above it).
 * The diff says both sides' line counts and shows invisible or direction-changing characters
 * as badges under a warning (invisible.ts), so the cell cannot read other than it will run.
 *
 * One answer per request, whatever the number of pages: every page holding the notebook's kernel
 * sees the request. It names the page that asked (its kernel connection's client id); only that
 * page answers, every other one answers `standby` with its id, and the kernel names one of those
 * when the request names no page or the named one stays silent. Every reply carries its page.
 * With collaboration the change goes into the shared document once, and every page shows it; without,
 * the answering page saves the notebook after an accepted change or an inserted cell, and the
 * pages that stood by load the saved file when the request ends (unless they hold unsaved changes).
 */
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { PanelLayout, Widget } from '@lumino/widgets';

import { insertBelow } from './cells';
import { withdrawFix } from './fixturn';
import { appendVisible, linesText, warning } from './invisible';
import { forEachNotebookKernel } from './kernels';

export const REQUEST_TARGET = 'agentik.notebook';
export const REPLY_TARGET = 'agentik.notebook.reply';

const ACTIONS = ['read', 'edit_cell', 'delete_cell', 'insert_cell', 'run_cells', 'revert_cells'] as const;

/** One change a rewind undoes (agentik_jupyter/notebook/revert.py): an edit to put back, a cell to remove or to restore. */
interface IChange {
  kind: 'edit' | 'insert' | 'delete';
  cell_id: string;
  old?: string;
  new?: string;
  source?: string;
  cell_type?: string;
  after?: string;
}

interface IRequest {
  action: (typeof ACTIONS)[number];
  request_id: string;
  cell_id?: string;
  expected_source?: string;
  new_source?: string;
  in_request?: boolean;
  /** Auto mode: apply the edit at once, marked as the agent's (Rewind takes it back). */
  auto?: boolean;
  source?: string;
  after_cell_id?: string | null;
  cell_ids?: string[];
  changes?: IChange[];
  title?: string;
  /** Who proposes an edit when it is not our agent: an outside client's name (e.g. "claude-code"). */
  by?: string;
  page?: string | null;
}

type Reply = Record<string, unknown>;

function isRequest(data: unknown): data is IRequest {
  const d = data as Partial<IRequest> | null;
  return !!d && typeof d.request_id === 'string' && (ACTIONS as readonly string[]).includes(d.action ?? '');
}

function answer(kernel: Kernel.IKernelConnection, requestId: string, data: Reply): void {
  const reply = kernel.createComm(REPLY_TARGET);
  reply.open({ request_id: requestId, page: kernel.clientId, ...data });
  reply.close();
}

/** Actions that change the notebook: the pages that stood by follow the saved file after them. */
const CHANGES: readonly string[] = ['edit_cell', 'delete_cell', 'insert_cell'];

/**
 * Without collaboration each page holds its own copy of the notebook: save the change, so the
 * pages that stood by (and the file on disk) have it. With collaboration the shared document
 * already carries it to every page, and the server saves it.
 */
async function saveForOthers(panel: NotebookPanel): Promise<void> {
  if (panel.context.model.collaborative === true || panel.isDisposed) {
    return;
  }
  try {
    await panel.context.save();
  } catch (error) {
    console.warn('agentik: could not save the notebook after the change', error);
  }
}

/**
 * Answer `standby`. When the request ends (the kernel closes it, saying how), follow a change the
 * answering page made: load the saved file, or, holding unsaved changes of its own (JupyterLab
 * marks a notebook changed when its kernel connects), make the same change in place.
 */
function standBy(
  panel: NotebookPanel,
  kernel: Kernel.IKernelConnection,
  comm: Kernel.IComm,
  request: IRequest,
  answered: Set<string>
): void {
  const focused = document.hasFocus() && document.visibilityState === 'visible';
  answer(kernel, request.request_id, { phase: 'standby', focused });
  if (!CHANGES.includes(request.action)) {
    return;
  }
  comm.onClose = msg => {
    const model = panel.context.model;
    if (answered.has(request.request_id) || panel.isDisposed || model.collaborative === true) {
      return;
    }
    const outcome = ((msg.content.data ?? {}) as { outcome?: { status?: string; cell_id?: string } }).outcome ?? {};
    const changed =
      outcome.status === 'accepted' ||
      outcome.status === 'accepted_and_run' ||
      outcome.status === 'applied' ||
      (outcome.status === 'ok' && !!outcome.cell_id);
    if (!changed) {
      return;
    }
    if (!model.dirty) {
      void panel.context.revert().catch(error => console.warn('agentik: could not load the saved notebook', error));
      return;
    }
    followInPlace(panel, request, outcome.cell_id ?? null);
  };
}

/** The change another page made, made here too (once: a cell already there is left alone). */
function followInPlace(panel: NotebookPanel, request: IRequest, newCellId: string | null): void {
  const shared = panel.content.model?.sharedModel;
  if (!shared) {
    return;
  }
  if (request.action === 'insert_cell') {
    if (newCellId && !shared.cells.some(cell => cell.id === newCellId)) {
      insertBelow(panel, request.source ?? '', request.after_cell_id ?? null, newCellId);
    }
    return;
  }
  const index = shared.cells.findIndex(cell => cell.id === request.cell_id);
  if (index < 0 || shared.cells[index].getSource() !== (request.expected_source ?? '')) {
    return;
  }
  if (request.action === 'delete_cell') {
    shared.deleteCell(index);
  } else {
    shared.cells[index].setSource(request.new_source ?? '');
  }
}

/** A line diff (longest common subsequence): cells are small, so O(n·m) is fine. */
export function lineDiff(before: string, after: string): Array<[' ' | '-' | '+', string]> {
  const a = before.split('\n');
  const b = after === '' ? [] : after.split('\n');
  const common: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      common[i][j] = a[i] === b[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
    }
  }
  const out: Array<[' ' | '-' | '+', string]> = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      out.push([' ', a[i++]]);
      j++;
    } else if (i < a.length && (j >= b.length || common[i + 1][j] >= common[i][j + 1])) {
      out.push(['-', a[i++]]);
    } else {
      out.push(['+', b[j++]]);
    }
  }
  return out;
}

/** The proposal under the cell's input: the diff (text only, never HTML, hidden characters as badges) and the buttons. */
class ProposalWidget extends Widget {
  constructor(
    title: string,
    diff: Array<[string, string]>,
    decide: (status: string) => void,
    canRun: boolean,
    note: string | null = null
  ) {
    super();
    this.addClass('agentik-proposal');
    const node = this.node;
    const heading = document.createElement('div');
    heading.className = 'agentik-proposal-title';
    heading.textContent = title;
    const said: HTMLElement[] = [];
    if (note) {
      const p = document.createElement('div');
      p.className = 'agentik-proposal-note';
      p.setAttribute('role', 'status');
      p.textContent = note;
      said.push(p);
    }
    const pre = document.createElement('pre');
    pre.className = 'agentik-proposal-diff';
    for (const [mark, text] of diff) {
      const line = document.createElement('div');
      line.className = `agentik-diff-line agentik-diff-${mark === '+' ? 'added' : mark === '-' ? 'removed' : 'same'}`;
      appendVisible(line, `${mark} ${text}`);
      pre.appendChild(line);
    }
    const hidden = warning(diff.map(([, text]) => text).join('\n'), 'This change');
    const buttons = document.createElement('div');
    buttons.className = 'agentik-proposal-buttons';
    // JupyterLab's own buttons: accept in the theme's accept colour, reject in its reject colour.
    const button = (label: string, status: string): void => {
      const b = document.createElement('button');
      const mod = status === 'rejected' ? 'jp-mod-reject' : 'jp-mod-accept';
      b.className = `jp-Button jp-mod-styled ${mod} agentik-proposal-${status.replace(/_/g, '-')}`;
      b.textContent = label;
      b.onclick = () => decide(status);
      buttons.appendChild(b);
    };
    button('Accept', 'accepted');
    if (canRun) {
      button('Accept and run', 'accepted_and_run');
    }
    button('Reject', 'rejected');
    node.append(heading, ...said, ...(hidden ? [hidden] : []), pre, buttons);
  }
}

function cellWidget(panel: NotebookPanel, cellId: string): { cell: NotebookPanel['content']['widgets'][number]; index: number } | null {
  const index = panel.content.widgets.findIndex(cell => cell.model.id === cellId);
  return index < 0 ? null : { cell: panel.content.widgets[index], index };
}

/**
 * Run the accepted cell and answer with its new outputs, so the agent can verify its fix. When the
 * asking cell itself is still executing (`--wait`), the run can only start after it: answer at once
 * that the run is queued, instead of the two waiting on each other.
 */
async function runAndReport(
  panel: NotebookPanel,
  kernel: Kernel.IKernelConnection,
  request: IRequest,
  index: number
): Promise<void> {
  const requestId = request.request_id;
  const queued = request.in_request === true;
  panel.content.activeCellIndex = index;
  const ran = NotebookActions.run(panel.content, panel.sessionContext);
  if (queued) {
    answer(kernel, requestId, { phase: 'result', status: 'accepted_and_run', queued: true });
    return;
  }
  const ok = await ran;
  const outputs = outputsOf(panel.content.widgets[index]);
  answer(kernel, requestId, { phase: 'result', status: 'accepted_and_run', ran_ok: ok, outputs });
}

function outputsOf(cell: NotebookPanel['content']['widgets'][number] | undefined): unknown[] {
  return cell && cell.model.type === 'code' ? (cell.model.toJSON() as { outputs?: unknown[] }).outputs ?? [] : [];
}

/**
 * Run the cells in order, one at a time, and answer what each printed; stop at the first failure
 * (as Run All does). Queued behind a still-executing asking cell (`--wait`), the runs would wait
 * for the turn that waits for them: then answer at once that they are queued.
 */
async function runCells(panel: NotebookPanel, kernel: Kernel.IKernelConnection, request: IRequest): Promise<void> {
  const found = (request.cell_ids ?? []).map(id => ({ id, at: cellWidget(panel, id) }));
  const cells: Reply[] = [];
  for (const { id, at } of found) {
    if (!at || at.cell.model.type !== 'code') {
      cells.push({ cell_id: id, status: at ? 'not_code' : 'missing' });
      continue;
    }
    const ran = NotebookActions.runCells(panel.content, [at.cell], panel.sessionContext);
    if (request.in_request === true) {
      void ran;
      cells.push({ cell_id: id, status: 'queued' });
      continue;
    }
    const ok = await ran;
    cells.push({ cell_id: id, status: ok ? 'ok' : 'failed', outputs: outputsOf(cellWidget(panel, id)?.cell) });
    if (!ok) {
      break;
    }
  }
  answer(kernel, request.request_id, { phase: 'result', status: 'ok', cells });
}

export const CHANGED_NOTE =
  'This cell changed after the agent proposed its change, so nothing was replaced. Below is the same change against the cell as it is now.';

function propose(panel: NotebookPanel, kernel: Kernel.IKernelConnection, comm: Kernel.IComm, request: IRequest): void {
  const found = cellWidget(panel, request.cell_id ?? '');
  if (!found) {
    answer(kernel, request.request_id, { phase: 'result', status: 'missing' });
    return;
  }
  const { cell } = found;
  if (cell.model.sharedModel.getSource() !== (request.expected_source ?? '')) {
    answer(kernel, request.request_id, { phase: 'result', status: 'stale' });
    return;
  }
  const deleting = request.action === 'delete_cell';
  if (request.auto === true) {
    applyAtOnce(panel, kernel, request, found.index, deleting);
    return;
  }
  const after = deleting ? '' : request.new_source ?? '';
  let decided = false;
  let widget: ProposalWidget | null = null;
  // The diff is against `before`; Accept applies it only while the cell still holds `before`. A cell
  // changed meanwhile (typing, a collaborator, a reload) is never overwritten: Accept says so and
  // offers the same change against the cell's new text instead.
  const offer = (target: NotebookPanel['content']['widgets'][number], before: string, note: string | null): void => {
    const sizes = deleting ? `(${linesText(before)})` : `(${linesText(before)} → ${linesText(after)})`;
    const who = typeof request.by === 'string' && request.by.trim() ? request.by.trim() : 'The agent';
    const title = request.title
      ? `${request.title} ${sizes}`
      : deleting
        ? `${who} proposes deleting this cell ${sizes}`
        : `${who} proposes this change ${sizes}`;
    widget = new ProposalWidget(
      title,
      lineDiff(before, after),
      status => {
        if (decided) {
          return;
        }
        widget?.dispose();
        const still = cellWidget(panel, request.cell_id ?? '');
        if (status !== 'rejected' && still) {
          const now = still.cell.model.sharedModel.getSource();
          if (now !== before) {
            offer(still.cell, now, CHANGED_NOTE);
            return;
          }
          decided = true;
          if (deleting) {
            panel.content.model?.sharedModel.deleteCell(still.index);
          } else {
            still.cell.model.sharedModel.setSource(after);
            if (status === 'accepted_and_run') {
              void saveForOthers(panel).then(() => runAndReport(panel, kernel, request, still.index));
              return;
            }
          }
          void saveForOthers(panel).then(() => answer(kernel, request.request_id, { phase: 'result', status }));
          return;
        }
        decided = true;
        answer(kernel, request.request_id, { phase: 'result', status });
      },
      !deleting && target.model.type === 'code',
      note
    );
    const layout = target.layout as PanelLayout;
    layout.insertWidget(Math.min(2, layout.widgets.length), widget);
    withdrawFix(layout);
    const index = panel.content.widgets.indexOf(target);
    reveal(panel, index < 0 ? found.index : index, widget);
  };
  offer(cell, cell.model.sharedModel.getSource(), null);
  comm.onClose = () => {
    decided = true;
    widget?.dispose();
  };
  const count = cell.model.type === 'code' ? (cell.model.toJSON() as { execution_count?: number | null }).execution_count : null;
  answer(kernel, request.request_id, { phase: 'shown', cell_number: found.index + 1, execution_count: count ?? null });
}

/**
 * Auto mode: the agent's edit lands without waiting for Accept (the kernel checked the source it read
 * is still the cell's). An edited cell says so under its input until a rewind puts it back (or the
 * notebook is reloaded).
 */
function applyAtOnce(
  panel: NotebookPanel,
  kernel: Kernel.IKernelConnection,
  request: IRequest,
  index: number,
  deleting: boolean
): void {
  if (deleting) {
    panel.content.model?.sharedModel.deleteCell(index);
  } else {
    const cell = panel.content.widgets[index];
    cell.model.sharedModel.setSource(request.new_source ?? '');
    const layout = cell.layout as PanelLayout;
    unmark(layout);
    const mark = new Widget();
    mark.addClass(AUTO_MARK);
    mark.node.textContent = '✎ Changed by the agent (Auto mode): Rewind takes it back';
    layout.insertWidget(Math.min(2, layout.widgets.length), mark);
  }
  void saveForOthers(panel).then(() => answer(kernel, request.request_id, { phase: 'result', status: 'applied' }));
}

const AUTO_MARK = 'agentik-auto-edit';

function unmark(layout: PanelLayout): void {
  layout.widgets.filter(w => w.hasClass(AUTO_MARK)).forEach(w => w.dispose());
}

/**
 * Rewind: undo the agent's changes, newest first, each only while the cell still holds what the
 * agent left in it (a cell the user changed since is left alone and reported as `changed`).
 */
export function revertCells(panel: NotebookPanel, changes: IChange[]): Array<{ cell_id: string; outcome: string }> {
  const shared = panel.content.model?.sharedModel;
  return changes.map(change => {
    const index = shared ? shared.cells.findIndex(cell => cell.id === change.cell_id) : -1;
    if (shared && change.kind === 'delete') {
      if (index >= 0) {
        return { cell_id: change.cell_id, outcome: 'present' };
      }
      const above = change.after ? shared.cells.findIndex(cell => cell.id === change.after) : -1;
      shared.insertCell(change.after && above < 0 ? shared.cells.length : above + 1, {
        id: change.cell_id,
        cell_type: change.cell_type === 'markdown' || change.cell_type === 'raw' ? change.cell_type : 'code',
        source: change.old ?? ''
      });
      return { cell_id: change.cell_id, outcome: 'restored' };
    }
    if (!shared || index < 0) {
      return { cell_id: change.cell_id, outcome: 'missing' };
    }
    const cell = shared.cells[index];
    const left = change.kind === 'edit' ? change.new ?? '' : change.source ?? '';
    if (cell.getSource() !== left) {
      return { cell_id: change.cell_id, outcome: 'changed' };
    }
    if (change.kind === 'edit') {
      cell.setSource(change.old ?? '');
      const widget = panel.content.widgets[index];
      if (widget) {
        unmark(widget.layout as PanelLayout); // (an Auto edit's mark goes with it)
      }
      return { cell_id: change.cell_id, outcome: 'reverted' };
    }
    shared.deleteCell(index);
    return { cell_id: change.cell_id, outcome: 'removed' };
  });
}

/** Whether the user is typing somewhere (an editor or a text box) other than inside `here`. */
function typingElsewhere(here: HTMLElement): boolean {
  const active = document.activeElement as HTMLElement | null;
  if (!active || here.contains(active)) {
    return false;
  }
  return !!active.closest('.cm-editor') || active.tagName === 'INPUT' || active.tagName === 'TEXTAREA';
}

/**
 * Bring a new diff where the user looks: the turn waits for an answer on this cell, which may be
 * far from the cell that asked. Scroll it into view and flash it, unless the user is typing elsewhere.
 */
function reveal(panel: NotebookPanel, index: number, widget: Widget): void {
  const cell = panel.content.widgets[index];
  if (!cell || typingElsewhere(cell.node)) {
    return;
  }
  void panel.content
    .scrollToItem(index, 'smart')
    .catch(() => undefined)
    .then(() => {
      if (widget.isDisposed) {
        return;
      }
      widget.node.scrollIntoView({ block: 'nearest' });
      cell.node.classList.remove(FLASH);
      void cell.node.offsetWidth; // restart the animation when a second diff lands on the same cell
      cell.node.classList.add(FLASH);
      window.setTimeout(() => cell.node.classList.remove(FLASH), FLASH_MS);
    });
}

const FLASH = 'agentik-flash';
const FLASH_MS = 1600;

function listen(panel: NotebookPanel, kernel: Kernel.IKernelConnection): void {
  const answered = new Set<string>(); // requests this page was named for (a second ask names it again)
  kernel.registerCommTarget(REQUEST_TARGET, (comm: Kernel.IComm, msg: KernelMessage.ICommOpenMsg) => {
    const data = msg.content.data as unknown;
    if (!isRequest(data)) {
      return;
    }
    if (data.page !== kernel.clientId) {
      standBy(panel, kernel, comm, data, answered);
      return;
    }
    answered.add(data.request_id);
    try {
      if (data.action === 'read') {
        const nb = panel.content.model?.toJSON() as { cells?: unknown[] } | undefined;
        answer(kernel, data.request_id, { phase: 'result', status: 'ok', path: panel.context.path, cells: nb?.cells ?? [] });
      } else if (data.action === 'insert_cell') {
        const cellId = insertBelow(panel, data.source ?? '', data.after_cell_id ?? null);
        const reply = { phase: 'result', status: cellId ? 'ok' : 'error', cell_id: cellId };
        void saveForOthers(panel).then(() => answer(kernel, data.request_id, reply));
      } else if (data.action === 'revert_cells') {
        answer(kernel, data.request_id, { phase: 'result', status: 'ok', results: revertCells(panel, data.changes ?? []) });
      } else if (data.action === 'run_cells') {
        void runCells(panel, kernel, data).catch(error =>
          answer(kernel, data.request_id, { phase: 'result', status: 'error', message: String(error) })
        );
      } else {
        propose(panel, kernel, comm, data);
      }
    } catch (error) {
      console.error('agentik: could not answer the notebook request', error);
      answer(kernel, data.request_id, { phase: 'result', status: 'error', message: String(error) });
    }
  });
}

/** Answer the agent's notebook requests on every notebook's kernel. */
export function serveNotebooks(notebooks: INotebookTracker): void {
  forEachNotebookKernel(notebooks, listen);
}

/** "Fix with agent" lives in fixturn.ts (it starts its turn over the control comm, no cell added). */
export { offerFixes } from './fixturn';
