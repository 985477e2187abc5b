/**
 * A turn outlives its page: a page that opens a notebook whose kernel runs (or just ran) an agent
 * turn shows what that turn's cell shows now, and follows it to the end.
 *
 * The turn runs in the kernel; what the kernel displayed while no page was open is gone with the
 * page, and the file holds what was last saved. So the kernel keeps each agent cell's outputs
 * (agentik_jupyter/kernel/live_cells.py). On each notebook kernel connection this asks for them over
 * the `agentik.control` comm (`live_cells`), puts them in their cells, and applies the messages that
 * follow for that cell's request (displays, updates by display id, clears, streams), as the cell's own
 * output area would have. The live view's widgets live in the kernel: ipywidgets draws them as they
 * are now (the answer so far, a waiting approval card whose buttons still work). A turn that has
 * ended is shown only in a cell that shows nothing (its saved outputs are left alone); so is any turn
 * in a document shared by real-time collaboration, where the cell's outputs may be another page's,
 * still following the turn.
 *
 * The cell's outputs are replaced through `clearExecution` first: JupyterLab trusts a cell without
 * outputs, and these come from the live kernel, as a run's own outputs do (docs/security.md).
 */
import type { ICodeCellModel } from '@jupyterlab/cells';
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import type * as nbformat from '@jupyterlab/nbformat';
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';

import { askKernel, ICellShown } from './control';
import { forEachNotebookKernel } from './kernels';

const ANSWER_MS = 60_000;

/** One cell's outputs kept in step with its request's messages, as its output area would. */
class CellFollower {
  private readonly displayIds: (string | null)[] = [];
  private clearAtNext = false;

  constructor(
    private readonly model: ICodeCellModel,
    private readonly kernel: Kernel.IKernelConnection,
    private readonly parent: string,
    shown: ICellShown
  ) {
    model.clearExecution(); // (trusted: see the module comment)
    for (const { output, display_id } of shown.outputs) {
      this.add(output, display_id);
    }
    kernel.iopubMessage.connect(this.onMessage, this);
    kernel.disposed.connect(this.stop, this);
  }

  stop(): void {
    this.kernel.iopubMessage.disconnect(this.onMessage, this);
    this.kernel.disposed.disconnect(this.stop, this);
  }

  get cellId(): string {
    return this.model.id;
  }

  private add(output: nbformat.IOutput, displayId: string | null): void {
    const before = this.model.outputs.length;
    this.model.outputs.add(output);
    if (this.model.outputs.length > before) {
      this.displayIds.push(displayId); // (a stream after a stream is merged into it)
    }
  }

  private onMessage(_: Kernel.IKernelConnection, msg: KernelMessage.IIOPubMessage): void {
    if (this.model.isDisposed || this.model.outputs.length !== this.displayIds.length) {
      this.stop(); // (the cell went, or its outputs were cleared by hand)
      return;
    }
    const kind = msg.header.msg_type;
    const content = msg.content as {
      data?: nbformat.IMimeBundle;
      metadata?: nbformat.OutputMetadata;
      transient?: { display_id?: string };
      name?: nbformat.StreamType;
      text?: string;
      wait?: boolean;
    };
    const displayId = typeof content.transient?.display_id === 'string' ? content.transient.display_id : null;
    if (kind === 'update_display_data') {
      // (by display id, whichever request sent it: `%agent stop` shows a stopped turn's transcript again)
      this.displayIds.forEach((id, index) => {
        if (id !== null && id === displayId) {
          this.model.outputs.set(index, this.display(content));
        }
      });
      return;
    }
    if ((msg.parent_header as Partial<KernelMessage.IHeader>).msg_id !== this.parent) {
      return;
    }
    if (kind === 'clear_output') {
      if (content.wait) {
        this.clearAtNext = true;
      } else {
        this.clear();
      }
      return;
    }
    if (kind !== 'display_data' && kind !== 'stream') {
      return;
    }
    if (this.clearAtNext) {
      this.clearAtNext = false;
      this.clear();
    }
    if (kind === 'stream') {
      this.add({ output_type: 'stream', name: content.name ?? 'stdout', text: content.text ?? '' }, null);
    } else {
      this.add(this.display(content), displayId);
    }
  }

  private display(content: { data?: nbformat.IMimeBundle; metadata?: nbformat.OutputMetadata }): nbformat.IDisplayData {
    return { output_type: 'display_data', data: content.data ?? {}, metadata: content.metadata ?? {} };
  }

  private clear(): void {
    this.model.outputs.clear();
    this.displayIds.length = 0;
  }
}

/** Ask the kernel what its agent cells show and follow them in this notebook. */
async function reattach(panel: NotebookPanel, kernel: Kernel.IKernelConnection, followers: CellFollower[]): Promise<void> {
  await panel.context.ready;
  await kernel.info; // (a request sent while the kernel still starts would go unanswered)
  let cells: ICellShown[];
  try {
    cells = (await askKernel(kernel, { action: 'live_cells' }, ANSWER_MS)).cells ?? [];
  } catch {
    return; // no agentik in this kernel (yet), or it is gone: nothing of ours to show
  }
  if (kernel.isDisposed || panel.sessionContext.session?.kernel !== kernel) {
    return;
  }
  const shared = panel.context.model.collaborative;
  for (const shown of cells) {
    const cell = panel.content.widgets.find(c => c.model.id === shown.cell_id);
    if (!cell || cell.model.type !== 'code') {
      continue;
    }
    const model = cell.model as ICodeCellModel;
    if ((shown.ended || shared) && model.outputs.length > 0) {
      // (the page shows this cell's outputs as saved: they stay; in a shared document another page
      // may be following this cell's request: both would add what comes next)
      continue;
    }
    followers.push(new CellFollower(model, kernel, shown.parent, shown));
  }
}

export const reattachPlugin: JupyterFrontEndPlugin<void> = {
  id: 'agentik-jupyter:reattach',
  description: 'A page that opens a notebook shows the agent turns its kernel runs, and follows them to the end.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, notebooks: INotebookTracker) => {
    const followers: CellFollower[] = [];
    // a cell run again has its own output area following its new request
    NotebookActions.executionScheduled.connect((_, { cell }) => {
      for (const follower of followers.filter(f => f.cellId === cell.model.id)) {
        follower.stop();
        followers.splice(followers.indexOf(follower), 1);
      }
    });
    forEachNotebookKernel(notebooks, (panel, kernel) => void reattach(panel, kernel, followers));
  }
};
