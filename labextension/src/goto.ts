/**
 * "Go to the approval" / "Show it": a status line that says the agent waits for the user carries
 * a button (agentik_jupyter/widgets/status.py goto_html), hidden unless this extension is here to
 * act on it. Run All held at "Queued (1 ahead)" by an approval far up the page: one click scrolls
 * the notebook to what waits for an answer, flashes its cell and puts the keyboard on its first
 * button (Enter or Space answers).
 *
 * What waits: the enabled accept button of an approval or trust card not yet answered
 * (widgets/shared.py APPROVAL_CLASSES, ACCEPT_CLASSES) or an on-cell diff's Accept (notebook.ts).
 * One delegated listener per notebook for each of pointerup and click (see below).
 *
 * A control shows only while what it goes to is out of view: with the approval card right above the
 * line, a button that scrolls to it would be noise. Its visibility is decided when the line is drawn
 * (it re-renders every second while the turn waits) and when the notebook scrolls.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

const GOTO = 'agentik-goto';
/** An accept button inside an approval or trust card still waiting (the panel's Send is accept-styled too). */
const APPROVAL = '.agentik-approval:not(.agentik-approval-done) .agentik-button-accept:not(:disabled)';
const ANSWER = '.agentik-proposal .jp-mod-accept:not(:disabled)';
const FLASH = 'agentik-flash';
/** The class that shows a control (the kernel draws it hidden by its inline style). */
const SHOWN = 'agentik-goto-shown';
const FLASH_MS = 1600;

type Cell = NotebookPanel['content']['widgets'][number];

interface ITarget {
  index: number;
  cell: Cell;
  button: HTMLElement;
}

/**
 * The first control waiting for the user's answer, of the kind the line named first: in another
 * cell than the line's (a queued turn's blocker is elsewhere), else in the line's own cell.
 * Cells' nodes are searched, not the document: a windowed notebook detaches cells out of view.
 */
export function pendingAnswer(panel: NotebookPanel, kind: string, from: Element): ITarget | null {
  const order = kind === 'answer' ? [ANSWER, APPROVAL] : [APPROVAL, ANSWER];
  for (const selector of order) {
    let own: ITarget | null = null;
    for (const [index, cell] of panel.content.widgets.entries()) {
      const button = cell.node.querySelector<HTMLElement>(selector);
      if (!button) {
        continue;
      }
      if (!cell.node.contains(from)) {
        return { index, cell, button };
      }
      own = own ?? { index, cell, button };
    }
    if (own) {
      return own;
    }
  }
  return null;
}

function flash(node: HTMLElement): void {
  node.classList.remove(FLASH);
  void node.offsetWidth; // restart the animation on a second click
  node.classList.add(FLASH);
  window.setTimeout(() => node.classList.remove(FLASH), FLASH_MS);
}

/** In the page and drawn (a windowed notebook hides or detaches the cells out of view). */
const drawn = (node: HTMLElement): boolean => node.isConnected && node.getClientRects().length > 0;

/** Drawn and wholly inside the window and the notebook's scrolling box. */
function inView(node: HTMLElement): boolean {
  if (!drawn(node)) {
    return false;
  }
  const box = node.getBoundingClientRect();
  const scroller = node.closest('.jp-WindowedPanel-outer') ?? document.scrollingElement;
  const area = scroller ? scroller.getBoundingClientRect() : { top: 0, bottom: window.innerHeight };
  return box.height > 0 && box.top >= Math.max(area.top, 0) && box.bottom <= Math.min(area.bottom, window.innerHeight);
}

/** Show each go-to control of the notebook whose target is out of view; hide the others. */
function showWhereNeeded(panel: NotebookPanel): void {
  for (const control of panel.content.node.querySelectorAll<HTMLElement>(`.${GOTO}`)) {
    const target = pendingAnswer(panel, control.getAttribute('data-agentik-goto') ?? '', control);
    control.classList.toggle(SHOWN, target !== null && !inView(target.button));
  }
}

/** What a control's visibility depends on: the control itself (drawn anew with its line), a card or a diff. */
const WATCHED = `.${GOTO}, .agentik-approval, .agentik-proposal`;

/**
 * `showWhereNeeded` when a control, a card or a diff is drawn (at once, before the browser paints:
 * a control redrawn with its line never flickers) and, once per frame at most, when the notebook scrolls.
 */
function watchViews(panel: NotebookPanel): void {
  let due = false;
  const soon = (): void => {
    if (!due) {
      due = true;
      requestAnimationFrame(() => {
        due = false;
        showWhereNeeded(panel);
      });
    }
  };
  const added = (records: MutationRecord[]): boolean =>
    records.some(r =>
      [...r.addedNodes].some(n => n instanceof Element && (n.matches(WATCHED) || n.querySelector(WATCHED) !== null))
    );
  new MutationObserver(records => {
    if (added(records)) {
      showWhereNeeded(panel);
    }
  }).observe(panel.content.node, { childList: true, subtree: true });
  panel.node.addEventListener('scroll', () => soon(), { capture: true, passive: true });
  window.addEventListener('resize', () => soon(), { passive: true });
}

const frame = (): Promise<void> => new Promise(resolve => requestAnimationFrame(() => resolve()));

/** Scroll the answer's control to the middle of the notebook, flash its cell, focus it. */
async function reveal(panel: NotebookPanel, target: ITarget): Promise<void> {
  if (!drawn(target.button)) {
    // A windowed notebook ("full") draws only the cells in view: bring the cell in first.
    await panel.content.scrollToItem(target.index, 'center').catch(() => undefined);
    for (let wait = 0; wait < 60 && !drawn(target.button); wait++) {
      await frame();
    }
  }
  // Cells between may be drawn at an estimated height until scrolled past: settle, then again.
  for (let pass = 0; pass < 2; pass++) {
    target.button.scrollIntoView({ block: 'center' });
    await frame();
  }
  flash(target.cell.node);
  target.button.focus({ preventScroll: true });
}

/**
 * Act on the control. A waiting turn's line re-renders every second (its elapsed time), replacing
 * the button: a mouse press and release that straddle a re-render land on two nodes, and the browser
 * then sends no click to either. So a pointer acts on its release over the control; the keyboard
 * (Enter, Space) on the click it sends (`detail` 0).
 */
function follow(panel: NotebookPanel): void {
  const act = (event: Event): void => {
    const control = (event.target as Element | null)?.closest?.(`.${GOTO}`);
    if (!control) {
      return;
    }
    event.preventDefault();
    event.stopPropagation(); // ours: not a cell selection
    const target = pendingAnswer(panel, control.getAttribute('data-agentik-goto') ?? '', control);
    if (target) {
      void reveal(panel, target);
    }
  };
  panel.content.node.addEventListener('pointerup', event => {
    if (event.button === 0) {
      act(event);
    }
  });
  panel.content.node.addEventListener('click', event => {
    if (event.detail === 0) {
      act(event);
    }
  });
}

/** Show the go-to controls (hidden by their inline style where nothing acts on them) and act on their clicks. */
function serveGoto(notebooks: INotebookTracker): void {
  const style = document.createElement('style');
  style.textContent = `.${GOTO}.${SHOWN} { display: inline-block !important; margin-left: 0.5em; }`;
  document.head.appendChild(style);
  const serve = (panel: NotebookPanel): void => {
    follow(panel);
    watchViews(panel);
  };
  notebooks.forEach(serve);
  notebooks.widgetAdded.connect((_, panel) => serve(panel));
}

export const gotoPlugin: JupyterFrontEndPlugin<void> = {
  id: 'agentik-jupyter:goto',
  description: 'Go to what the agent waits for: a waiting status line scrolls to the approval or diff and focuses it.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, notebooks: INotebookTracker) => serveGoto(notebooks)
};
