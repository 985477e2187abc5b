/**
 * Cells the agent proposes (its insert_cell tool) from a turn running in the background.
 *
 * The kernel asks on the notebook request comm (notebook.ts, action `insert_cell`) with the
 * source and the asking cell's id; this inserts a code cell below that cell (or below the
 * active cell) and never runs it. The kernel side is agentik_jupyter/notebook/cells.py.
 *
 * Nobody approved the code, so the cell is marked as an unrun proposal: its first line is the
 * kernel's comment saying so (notebook/cells.py PROPOSAL_LINE, already in `source`), and the cell
 * carries the tag `agentik-proposal` and the metadata `{"agentik": {"proposal": true}}`, which
 * stay in the saved notebook for any reader or tool (nbconvert's TagRemovePreprocessor, papermill).
 *
 * Like a cell the user inserts (JupyterLab's NotebookActions give a new code cell `trusted: true`),
 * the cell is trusted: it has no outputs yet, and whatever it shows comes from the user's own run.
 * An untrusted one made Notebook 7's header flip from "Trusted" to "Not Trusted" at each proposal.
 */
import { NotebookPanel } from '@jupyterlab/notebook';

/** The tag every proposed cell carries. */
export const PROPOSAL_TAG = 'agentik-proposal';

/**
 * Insert `source` as a code cell below `afterCellId` (or the active cell); the new cell's id.
 * `id`: the id another page gave the same cell (a second page follows the first one's insert).
 */
export function insertBelow(panel: NotebookPanel, source: string, afterCellId: string | null, id?: string): string | null {
  const notebook = panel.content;
  const shared = notebook.model?.sharedModel;
  if (!shared) {
    return null;
  }
  let index = afterCellId ? shared.cells.findIndex(cell => cell.id === afterCellId) : -1;
  if (index < 0) {
    index = notebook.activeCellIndex;
  }
  const cell = shared.insertCell(Math.min(index + 1, shared.cells.length), {
    ...(id ? { id } : {}),
    cell_type: 'code',
    source,
    metadata: { agentik: { proposal: true }, tags: [PROPOSAL_TAG], trusted: true }
  });
  return cell.id;
}
