/**
 * The chat panel's saved place (`%agent panel`): the live panel while its widget lives, the
 * session's transcript with Resume once it is gone.
 *
 * A widget's model lives in its kernel: after a restart, or when the notebook is opened again
 * later, JupyterLab draws "Error displaying widget: model not found" where the panel was. So once
 * this extension answered the kernel's handshake with `panel: 1` (livetext.ts), the kernel puts
 * `application/vnd.agentik.panel+json` (`{session}`: the session shown) beside the widget in the
 * panel's output (agentik_jupyter/widgets/panel.py PANEL_MIME), and this renderer, ranked before
 * ipywidgets' own, draws it: it draws the widget as ipywidgets would, and asks the kernel over the
 * `agentik.control` comm (`panel_live`) whether that widget still lives there. When it does not
 * (a new kernel, a kernel without agentik, no kernel) or the kernel restarts (however asked:
 * restarts.ts), it draws the session's messages from the sessions file (the server's sessions API,
 * as the sidebar does) and offers **Resume**: the kernel continues that session (loading agentik
 * first if it must) and the `%agent panel` cell runs again, so the live panel takes the place back.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMime } from '@jupyterlab/rendermime';
import { PanelLayout, Widget } from '@lumino/widgets';

import { fetchHistory, listSessions } from './api';
import { askKernel, isSessionId, loadThenRetry, NoAnswerError, NotLoadedError } from './control';
import { historyEntries } from './history';
import { el, renderEntries } from './renderer';
import { followServerEvents, kernelRestarts } from './restarts';

export const PANEL_MIME = 'application/vnd.agentik.panel+json';
const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
const PANEL_CELL = /^\s*%agent\s+panel\s*$/;
const ANSWER_MS = 60_000;
const MESSAGES = 100;
/** Before ipywidgets' renderer (-10): the bundle holds both, and this one decides. */
const RANK = -20;

class PanelRenderer extends Widget implements IRenderMime.IRenderer {
  private model: IRenderMime.IMimeModel | null = null;
  private saved = false;

  constructor(
    private readonly notebook: NotebookPanel,
    private readonly options: IRenderMime.IRendererOptions
  ) {
    super();
    this.layout = new PanelLayout();
    this.addClass('agentik-panel-place');
    kernelRestarts(notebook.sessionContext).restarted.connect(this.onRestart, this);
  }

  dispose(): void {
    kernelRestarts(this.notebook.sessionContext).restarted.disconnect(this.onRestart, this);
    super.dispose();
  }

  private onRestart(): void {
    if (this.model) {
      void this.drawSaved(); // (the panel's widget is gone with its kernel)
    }
  }

  private get sessionId(): string | null {
    const data = (this.model?.data[PANEL_MIME] ?? {}) as Record<string, unknown>;
    return isSessionId(data.session) ? data.session : null;
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.model = model;
    this.saved = false;
    const view = model.data[WIDGET_MIME] as { model_id?: unknown } | undefined;
    const modelId = typeof view?.model_id === 'string' ? view.model_id : '';
    const lives = this.lives(modelId);
    if (modelId && model.trusted) {
      // (not awaited: ipywidgets waits for a kernel and a model that may never come; an output the
      // kernel just sent is trusted, a saved one may not be)
      void this.drawLive(model);
    }
    if ((await lives) === false) {
      await this.drawSaved();
    }
  }

  /** The panel's widget, drawn by ipywidgets' own renderer of this notebook. */
  private async drawLive(model: IRenderMime.IMimeModel): Promise<void> {
    const rendermime = this.notebook.content.rendermime;
    if (!rendermime.getFactory(WIDGET_MIME)) {
      return;
    }
    const inner = rendermime.createRenderer(WIDGET_MIME);
    this.replace(inner);
    await inner.renderModel(model);
  }

  /** Whether the panel's widget lives in the kernel; null when the kernel is too busy to say (a long cell). */
  private async lives(modelId: string): Promise<boolean | null> {
    const kernel = this.notebook.sessionContext.session?.kernel;
    if (!modelId || !kernel) {
      return false;
    }
    try {
      await kernel.info; // (a request sent while the kernel still starts would go unanswered)
      return !!(await askKernel(kernel, { action: 'panel_live', model_id: modelId }, ANSWER_MS)).live;
    } catch (error) {
      return error instanceof NoAnswerError ? null : false; // (else: no agentik in that kernel, or it is gone)
    }
  }

  private replace(widget: Widget): void {
    const layout = this.layout as PanelLayout;
    [...layout.widgets].forEach(old => old.dispose());
    layout.addWidget(widget);
  }

  /** The session's messages from the sessions file, and Resume. */
  private async drawSaved(): Promise<void> {
    if (this.saved || this.isDisposed) {
      return;
    }
    this.saved = true;
    const box = new Widget();
    box.addClass('jp-AgentikTranscript');
    box.addClass('agentik-panel-saved');
    this.replace(box);
    const path = this.notebook.context.localPath;
    const note = el('div', 'agentik-panel-note');
    try {
      const sessions = await listSessions(path);
      const session = sessions.find(s => s.id === this.sessionId) ?? (this.sessionId ? null : sessions[0]);
      if (!session) {
        box.node.append(el('div', 'agentik-title', 'Agent chat panel'), el('em', '', 'No saved session to show here.'));
        return;
      }
      const page = await fetchHistory(path, session.id, MESSAGES, null);
      const entries = historyEntries(page.entries.map(e => e.record));
      const title = el('div', 'agentik-title', `Agent chat panel: ${session.title ?? 'Untitled session'}`);
      const older = page.next_before_seq !== null ? [el('em', 'agentik-panel-older', 'Older messages are in the Agent sessions sidebar.')] : [];
      box.node.append(title, ...older, ...(await renderEntries(entries, this.options)));
      note.textContent = 'Saved session: the panel was closed with its kernel.';
      box.node.append(note, this.resumeButton(session.id, note));
    } catch (error) {
      box.node.append(el('div', 'agentik-error', `The saved session could not be read: ${(error as Error).message}`));
    }
  }

  private resumeButton(sessionId: string, note: HTMLElement): HTMLElement {
    const row = el('div', 'agentik-panel-resume');
    const resume = el('button', 'jp-Button jp-mod-styled jp-mod-accept', 'Resume') as HTMLButtonElement;
    resume.type = 'button';
    resume.title = 'Continue this session in the notebook, in a live chat panel';
    const kernel = () => this.notebook.sessionContext.session?.kernel;
    const say = (text: string): void => {
      note.textContent = text;
    };
    const go = async (): Promise<void> => {
      const target = kernel();
      if (!target) {
        say('This notebook has no running kernel: start one, then Resume.');
        return;
      }
      try {
        const answer = await askKernel(target, { action: 'resume', id: sessionId }, ANSWER_MS);
        if (!answer.ok) {
          say(answer.error ?? 'The kernel could not continue this session.');
          return;
        }
      } catch (error) {
        if (error instanceof NotLoadedError) {
          say('The agent is not loaded in this kernel.');
          row.replaceChildren(loadThenRetry(kernel, ', then resume', go, say));
          return;
        }
        say((error as Error).message);
        return;
      }
      this.reopen(say);
    };
    resume.addEventListener('click', () => {
      resume.disabled = true;
      void go().finally(() => (resume.disabled = false));
    });
    row.appendChild(resume);
    return row;
  }

  /** Run the `%agent panel` cell again, so the live panel takes its place; other cells are the user's to run. */
  private reopen(say: (text: string) => void): void {
    const cell = this.notebook.content.widgets.find(c => c.node.contains(this.node));
    if (cell && cell.model.type === 'code' && PANEL_CELL.test(cell.model.sharedModel.getSource())) {
      say('Resuming\u2026');
      void NotebookActions.runCells(this.notebook.content, [cell], this.notebook.sessionContext);
      return;
    }
    say('Continued: the next %%agent cell, or a new %agent panel, continues this session.');
  }
}

export const panelPlugin: JupyterFrontEndPlugin<void> = {
  id: 'agentik-jupyter:panel',
  description: "Draws the chat panel's saved place as its session's transcript, with Resume, once the panel's widget is gone.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    followServerEvents(app.serviceManager.events);
    const add = (panel: NotebookPanel): void => {
      panel.content.rendermime.addFactory(
        { safe: true, mimeTypes: [PANEL_MIME], defaultRank: RANK, createRenderer: options => new PanelRenderer(panel, options) },
        RANK
      );
    };
    tracker.widgetAdded.connect((_, panel) => add(panel));
    tracker.forEach(add);
  }
};
