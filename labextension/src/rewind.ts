/**
 * A finished turn's Rewind, drawn from a plain output (agentik_jupyter/widgets/rewind_output.py).
 *
 * A widget's model lives in its kernel: after a restart, or when the notebook is opened again
 * later, JupyterLab draws "Error displaying widget: model not found" under every cell that saved
 * one. So once this extension answered the kernel's handshake with `rewind: 1` (livetext.ts), the
 * kernel leaves a finished turn's Rewind as `application/vnd.agentik.rewind+json` (the session's
 * id and the turn's question's message id, with an empty text/plain), and this renderer draws it.
 * It reaches the kernel over the `agentik.control` comm (control.ts): `rewind_states` for all the
 * notebook's Rewinds at once (when one is drawn, after each cell run and after a rewind: they follow
 * `%agent rewind` and checkpoints released by later turns), `rewind_preview` on Rewind, `rewind` on
 * "Rewind now"; the kernel does the work with the widget
 * control's code (kernel/rewind_requests.py). A turn the kernel does not know (a new kernel, a
 * kernel without agentik, another session, no answer) shows nothing; a rewound turn, or one whose
 * checkpoint was released, one quiet line. The renderer is added to each notebook's own rendermime:
 * it needs that notebook's kernel.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMime } from '@jupyterlab/rendermime';
import { Widget } from '@lumino/widgets';

import { askKernel, ControlRequest, IControlAnswer, isSessionId } from './control';
import { el } from './renderer';
import { followServerEvents, kernelRestarts } from './restarts';

export const REWIND_MIME = 'application/vnd.agentik.rewind+json';
/**
 * How long an answer may take: a rewind may wait for the user's answer on a cell they changed since
 * (a diff to accept), and a kernel running a long cell answers once it is done (until then the turn
 * shows nothing, then its button).
 */
const ANSWER_MS = 600_000;
const BUTTON = 'jp-Button jp-mod-styled';

type TurnIds = { session: string; turn: string };

/**
 * The Rewinds drawn in one notebook, brought up to date together: one `rewind_states` request for
 * all of them when one is drawn (the notebook opens, a turn ends: it may release older turns'
 * checkpoints), after each cell run (`%agent rewind`, `%agent new` …) and after a rewind here.
 */
class NotebookRewinds {
  readonly drawn = new Set<RewindRenderer>();
  private due = false;

  constructor(readonly panel: NotebookPanel) {
    kernelRestarts(panel.sessionContext).restarted.connect(() => {
      this.drawn.forEach(renderer => renderer.show()); // (the kernel's turns are gone with it)
    });
  }

  /** Ask about every turn drawn here once the current work is done (many calls, one request). */
  refreshSoon(): void {
    if (this.due) {
      return;
    }
    this.due = true;
    void this.panel.sessionContext.ready.then(() =>
      window.setTimeout(() => {
        this.due = false;
        void this.refresh();
      }, 0)
    );
  }

  private async refresh(): Promise<void> {
    const kernel = this.panel.sessionContext.session?.kernel;
    const asked = [...this.drawn].filter(renderer => renderer.ids !== null);
    if (!kernel || !asked.length) {
      return;
    }
    let states: IControlAnswer[] | undefined;
    try {
      const turns = asked.map(renderer => renderer.ids as TurnIds);
      states = (await askKernel(kernel, { action: 'rewind_states', turns }, ANSWER_MS)).states;
    } catch {
      states = undefined; // (no agentik in that kernel, or no answer: nothing to offer)
    }
    asked.forEach((renderer, i) => renderer.drawState(states?.[i] ?? null));
  }
}

const notebooks = new WeakMap<NotebookPanel['content'], NotebookRewinds>();

class RewindRenderer extends Widget implements IRenderMime.IRenderer {
  ids: TurnIds | null = null;
  private busy = false;
  /** The last rewind's printout, or why nothing was rewound: stays above the state as it changes. */
  private outcome: Node[] = [];

  constructor(private readonly rewinds: NotebookRewinds) {
    super();
    this.addClass('agentik-turn-rewind');
    rewinds.drawn.add(this);
  }

  private get panel(): NotebookPanel {
    return this.rewinds.panel;
  }

  dispose(): void {
    this.rewinds.drawn.delete(this);
    super.dispose();
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const data = (model.data[REWIND_MIME] ?? {}) as Record<string, unknown>;
    this.ids = isSessionId(data.session) && isSessionId(data.turn) ? { session: data.session, turn: data.turn } : null;
    this.show();
    if (this.ids) {
      this.rewinds.refreshSoon();
    }
  }

  /** The turn's state as the kernel said it (null: no answer), unless the user is using it. */
  drawState(answer: IControlAnswer | null): void {
    if (!this.busy && !this.node.querySelector('.agentik-rewind-choices')) {
      this.draw(answer);
    }
  }

  private async ask(action: 'rewind_preview' | 'rewind'): Promise<IControlAnswer | null> {
    const kernel = this.panel.sessionContext.session?.kernel;
    if (!this.ids || !kernel) {
      return null;
    }
    const request = { action, ...this.ids } as ControlRequest;
    try {
      return await askKernel(kernel, request, ANSWER_MS);
    } catch {
      return null; // (no agentik in that kernel, or no answer: nothing to offer)
    }
  }

  /** What the kernel said, below the last outcome: the button, a quiet line, or nothing. */
  private draw(answer: IControlAnswer | null): void {
    const above = this.outcome;
    if (!answer) {
      this.show(...above);
    } else if (!answer.ok) {
      this.outcome = [el('div', 'agentik-rewind-note', answer.error ?? '')];
      this.show(...this.outcome, this.button());
    } else if (answer.state === 'ready') {
      this.show(...above, this.button());
    } else if (answer.state === 'rewound' || answer.state === 'released') {
      this.show(...above, el('em', 'agentik-rewind-note', answer.note ?? ''));
    } else {
      this.show(...above);
    }
  }

  show(...nodes: Node[]): void {
    this.node.replaceChildren(...nodes);
    this.node.style.display = nodes.length ? '' : 'none';
  }

  private button(): HTMLElement {
    const rewind = this.action('Rewind', '', () => this.preview());
    rewind.title = 'Take this turn back, and the turns after it (shows what it would do, asks first)';
    return rewind;
  }

  private action(label: string, kind: string, then: () => Promise<void>): HTMLButtonElement {
    const button = el('button', `${BUTTON} ${kind}`.trim(), label) as HTMLButtonElement;
    button.type = 'button';
    button.addEventListener('click', () => {
      if (this.busy) {
        return;
      }
      this.busy = true;
      this.node.querySelectorAll('button').forEach(b => ((b as HTMLButtonElement).disabled = true));
      void then().finally(() => (this.busy = false));
    });
    return button;
  }

  private async preview(): Promise<void> {
    const answer = await this.ask('rewind_preview');
    if (answer?.ok && answer.state !== 'ready' && answer.note) {
      this.show(el('em', 'agentik-rewind-note', answer.note)); // (asked: even "resume its session to rewind it")
      return;
    }
    if (!answer?.ok || !answer.lines?.length) {
      this.draw(answer ?? { ok: false, error: 'Nothing rewound: the kernel did not answer.' });
      return;
    }
    const now = this.action('Rewind now', 'jp-mod-reject', () => this.rewind());
    const cancel = this.action('Cancel', '', async () => {
      this.outcome = [];
      this.draw({ ok: true, state: 'ready' });
    });
    const choices = el('div', 'agentik-rewind-choices');
    choices.append(now, cancel);
    this.show(lines(answer.lines), choices);
  }

  private async rewind(): Promise<void> {
    this.show(el('em', '', 'Rewinding\u2026'));
    const answer = await this.ask('rewind');
    if (answer?.ok && answer.lines?.length) {
      this.outcome = [lines(answer.lines)];
      this.draw(answer);
      this.rewinds.refreshSoon();
    } else {
      this.draw(answer ?? { ok: false, error: 'Nothing rewound: the kernel did not answer.' });
    }
  }
}

/** A preview or a printout: its first line in bold, the facts below it. */
function lines(text: string[]): HTMLElement {
  const box = el('div', 'agentik-rewind');
  const list = el('ul');
  text.slice(1).forEach(line => list.appendChild(el('li', '', line)));
  box.append(el('b', '', text[0]), list);
  return box;
}

export const rewindPlugin: JupyterFrontEndPlugin<void> = {
  id: 'agentik-jupyter:rewind',
  description: "Draws a finished agent turn's Rewind from a plain output, so a saved notebook holds no widget for it.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    followServerEvents(app.serviceManager.events);
    const add = (panel: NotebookPanel): void => {
      const rewinds = new NotebookRewinds(panel);
      notebooks.set(panel.content, rewinds);
      panel.content.rendermime.addFactory(
        { safe: true, mimeTypes: [REWIND_MIME], defaultRank: 40, createRenderer: () => new RewindRenderer(rewinds) },
        40
      );
    };
    tracker.widgetAdded.connect((_, panel) => add(panel));
    tracker.forEach(add);
    NotebookActions.executed.connect((_, { notebook }) => notebooks.get(notebook)?.refreshSoon());
  }
};
