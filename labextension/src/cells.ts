/**
 * Cells the agent proposes (its insert_cell tool) from a turn running in the background.
 *
 * The kernel opens a comm to `agentik.cells` with the source and the asking cell's id;
 * this inserts a code cell below that cell (or below the active cell), never runs it,
 * and answers on a comm it opens to `agentik.cells.ack` with the new cell's id. The
 * kernel side is agentik_jupyter/kernel/cells.py.
 */
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';

import { forEachNotebookKernel } from './kernels';

export const CELLS_TARGET = 'agentik.cells';
export const ACK_TARGET = 'agentik.cells.ack';

interface IInsertRequest {
  action: 'insert_cell';
  request_id: string;
  source: string;
  after_cell_id: string | null;
}

function isInsertRequest(data: unknown): data is IInsertRequest {
  const d = data as Partial<IInsertRequest> | null;
  return !!d && d.action === 'insert_cell' && typeof d.request_id === 'string' && typeof d.source === 'string';
}

/** Insert `source` as a code cell below `afterCellId` (or the active cell); the new cell's id. */
export function insertBelow(panel: NotebookPanel, source: string, afterCellId: string | null): string | null {
  const notebook = panel.content;
  const shared = notebook.model?.sharedModel;
  if (!shared) {
    return null;
  }
  let index = afterCellId ? shared.cells.findIndex(cell => cell.id === afterCellId) : -1;
  if (index < 0) {
    index = notebook.activeCellIndex;
  }
  const cell = shared.insertCell(Math.min(index + 1, shared.cells.length), { cell_type: 'code', source });
  return cell.id;
}

function answer(kernel: Kernel.IKernelConnection, requestId: string, cellId: string | null): void {
  const ack = kernel.createComm(ACK_TARGET);
  ack.open({ request_id: requestId, cell_id: cellId });
  ack.close();
}

function listen(panel: NotebookPanel, kernel: Kernel.IKernelConnection): void {
  kernel.registerCommTarget(CELLS_TARGET, (_comm: Kernel.IComm, msg: KernelMessage.ICommOpenMsg) => {
    const data = msg.content.data as unknown;
    if (!isInsertRequest(data)) {
      return;
    }
    let cellId: string | null = null;
    try {
      cellId = insertBelow(panel, data.source, data.after_cell_id);
    } catch (error) {
      console.error('agentik: could not insert the proposed cell', error);
    }
    answer(kernel, data.request_id, cellId);
  });
}

/** Insert proposed cells in every notebook, on its kernel and any kernel it switches to later. */
export function followNotebookKernels(notebooks: INotebookTracker): void {
  forEachNotebookKernel(notebooks, listen);
}
