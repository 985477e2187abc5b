/**
 * "Fix with agent" under a cell that failed, and the fix turn it starts, shown under that cell.
 *
 * The button used to insert and run a `%agent fix <uuid>` cell, which stayed in the user's
 * notebook. Now it asks the kernel over the `agentik.control` comm (`fix`, control.ts): the
 * kernel starts what `%agent fix CELL_ID` starts, and what it displays for that turn has the
 * comm's open message as parent. Those messages (the live view, then the transcript replacing it
 * through its display id, and any printed line) are rendered here, under the failed cell, with
 * the notebook's own renderers (ipywidgets included). They are not cell outputs: the notebook is
 * saved without them; the session keeps the turn (the chat panel, the sessions sidebar).
 */
import { Notebook, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { Panel, PanelLayout, Widget } from '@lumino/widgets';

import { askKernel, isCellId, loadThenRetry, NotLoadedError } from './control';
import { el } from './renderer';

const FIX_BUTTON = 'agentik-fix-button';
const FIX_TURN = 'agentik-fix-turn';
/** The answer comes once the turn started (the kernel waits up to 10 s for that). */
const FIX_ANSWER_MS = 30_000;

type Bundle = Record<string, unknown>;

/** The fix turn's outputs under the failed cell: the kernel's messages whose parent is the request. */
class FixTurn extends Panel {
  private readonly byDisplay = new Map<string, Widget>();
  private kernel: Kernel.IKernelConnection | null = null;
  private parentId = '';

  constructor(private readonly rendermime: IRenderMimeRegistry) {
    super();
    this.addClass(FIX_TURN);
    const heading = el('div', 'agentik-fix-turn-heading');
    const note = el('span', '', 'Fix with agent \u2014 shown here while the notebook is open, not saved in it');
    const dismiss = el('button', 'jp-Button jp-mod-styled agentik-fix-dismiss', 'Dismiss');
    dismiss.title = 'Hide this view (the turn goes on; the session keeps it)';
    dismiss.onclick = () => this.dispose();
    heading.append(note, dismiss);
    this.addWidget(new Widget({ node: heading }));
  }

  /** Show what the kernel displays in answer to the message `parentId`. */
  follow(kernel: Kernel.IKernelConnection, parentId: string): void {
    this.kernel = kernel;
    this.parentId = parentId;
    kernel.iopubMessage.connect(this.onMessage, this);
  }

  say(text: string): void {
    const line = el('div', 'agentik-fix-status', text);
    this.addWidget(new Widget({ node: line }));
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.kernel?.iopubMessage.disconnect(this.onMessage, this);
    super.dispose();
  }

  private onMessage(_: Kernel.IKernelConnection, msg: KernelMessage.IIOPubMessage): void {
    if ((msg.parent_header as Partial<KernelMessage.IHeader>).msg_id !== this.parentId) {
      return;
    }
    const content = msg.content as { data?: Bundle; metadata?: Bundle; transient?: { display_id?: string }; text?: string };
    const kind = msg.header.msg_type;
    if (kind === 'stream' && typeof content.text === 'string') {
      this.say(content.text.trimEnd());
    } else if ((kind === 'display_data' || kind === 'update_display_data') && content.data) {
      const displayId = content.transient?.display_id;
      const old = displayId ? this.byDisplay.get(displayId) : undefined;
      if (kind === 'update_display_data' && !old) {
        return;
      }
      const widget = this.render(content.data, content.metadata ?? {});
      if (!widget) {
        return;
      }
      this.insertWidget(old ? this.widgets.indexOf(old) : this.widgets.length, widget);
      old?.dispose();
      if (displayId) {
        this.byDisplay.set(displayId, widget);
      }
    }
  }

  /** The bundle as a cell would show it: the notebook's renderers, trusted like a live output. */
  private render(data: Bundle, metadata: Bundle): Widget | null {
    const mime = this.rendermime.preferredMimeType(data as never, 'any');
    if (!mime) {
      return null;
    }
    const renderer = this.rendermime.createRenderer(mime);
    renderer.addClass('agentik-fix-output');
    void renderer.renderModel(new MimeModel({ data: data as never, metadata: metadata as never, trusted: true }));
    return renderer;
  }
}

/** "Fix with agent" and a line saying what happened when it could not start. */
class FixButton extends Widget {
  readonly button = el('button', 'jp-Button jp-mod-styled jp-mod-accept', 'Fix with agent') as HTMLButtonElement;
  private readonly status = el('span', 'agentik-fix-status');

  constructor(onClick: () => Promise<void>) {
    super();
    this.addClass(FIX_BUTTON);
    this.button.title = 'Ask the agent to find the cause and propose a fix on the cell (no cell is added)';
    this.button.onclick = () => void onClick();
    this.node.append(this.button, this.status);
  }

  say(text: string, ...actions: HTMLElement[]): void {
    this.status.textContent = text;
    if (actions.length) {
      this.status.append(' ', ...actions);
    }
  }
}

/**
 * The cell's "Fix with agent" goes once a change is proposed on it (a fix under way, whichever way
 * it started): a second fix would propose its change to the cell the first is about to change.
 */
export function withdrawFix(layout: PanelLayout): void {
  removeAll(layout, FIX_BUTTON);
}

function removeAll(layout: PanelLayout, className: string): void {
  for (const widget of [...layout.widgets]) {
    if (widget.hasClass(className)) {
      widget.dispose();
    }
  }
}

/** Start the fix of `cellId` over the control comm; the turn shows under the cell. */
async function startFix(notebook: Notebook, cellId: string, button: FixButton): Promise<void> {
  const panel = notebook.parent as NotebookPanel | null;
  const kernel = panel?.sessionContext.session?.kernel ?? null;
  const cell = notebook.widgets.find(c => c.model.id === cellId);
  if (!kernel || !cell) {
    button.say('No kernel to ask.');
    return;
  }
  if (!isCellId(cellId)) {
    button.say('This cell\u2019s id cannot be sent to the agent.');
    return;
  }
  button.button.disabled = true;
  button.say('Starting the fix\u2026');
  const layout = cell.layout as PanelLayout;
  removeAll(layout, FIX_TURN);
  const turn = new FixTurn(notebook.rendermime);
  layout.addWidget(turn);
  try {
    const answer = await askKernel(kernel, { action: 'fix', cell_id: cellId }, FIX_ANSWER_MS, id => turn.follow(kernel, id));
    if (answer.ok) {
      button.dispose();
      return;
    }
    turn.dispose();
    button.say(answer.error ?? 'The kernel could not start the fix.');
  } catch (error) {
    turn.dispose();
    if (error instanceof NotLoadedError) {
      const say = (text: string): void => button.say(text);
      const current = (): Kernel.IKernelConnection | null | undefined =>
        (notebook.parent as NotebookPanel | null)?.sessionContext.session?.kernel;
      button.say(error.message, loadThenRetry(current, ' and fix', () => startFix(notebook, cellId, button), say));
    } else {
      button.say(error instanceof Error ? error.message : String(error));
    }
  }
  button.button.disabled = false;
}

/** Offer "Fix with agent" on cells that failed, and take it away when they run cleanly again. */
export function offerFixes(): void {
  NotebookActions.executed.connect((_, { notebook, cell, success }) => {
    const layout = cell.layout as PanelLayout;
    removeAll(layout, FIX_BUTTON);
    const source = cell.model.sharedModel.getSource().trimStart();
    if (success || cell.model.type !== 'code' || source.startsWith('%agent') || source.startsWith('%%agent')) {
      return;
    }
    const cellId = cell.model.id;
    const button: FixButton = new FixButton(() => startFix(notebook, cellId, button));
    layout.addWidget(button);
  });
}
