/**
 * The append-only live answer (agentik_jupyter/widgets/live_text.py) and the frontend handshake.
 *
 * A streamed answer's HTML is `value + tail`: `value`, finished Markdown blocks, only grows;
 * `tail`, the unfinished block, changes. The kernel sends what changed in a custom message
 * `{k, a, s}`: keep the first `k` characters of what is shown, add `a`, and the first `s`
 * characters are finished. Finished blocks are added to the page once and
 * never rebuilt; only the tail's nodes are replaced. The HTML comes sanitized from the kernel
 * and is cleaned again by the transcript's allow-list (safehtml.ts) before it is inserted
 * (the model and view: livetext_widget.ts).
 *
 * The kernel uses this widget only after the handshake: at `%load_ext` it opens a comm to
 * `agentik.frontend`, answered here, on every notebook kernel connection, by opening
 * `agentik.frontend.reply` with `{live_text: 1}`, only when ipywidgets' manager is there
 * (@jupyter-widgets/base is loaded on demand: without it the rest of the extension works and
 * that key is left out), and `{rewind: 1}`: a finished turn's Rewind is drawn by rewind.ts, and
 * (with ipywidgets' manager) `{panel: 1}`: the chat panel's saved place is drawn by panel.ts.
 * Without this extension the kernel streams into ipywidgets' HTML widgets.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';

import { forEachNotebookKernel } from './kernels';

const HELLO_TARGET = 'agentik.frontend';
const REPLY_TARGET = 'agentik.frontend.reply';

/** Register the LiveText widget with ipywidgets' manager; false when there is none. */
async function registerWidget(app: JupyterFrontEnd): Promise<boolean> {
  try {
    const base = await import('@jupyter-widgets/base');
    const registry = await app.resolveOptionalService(base.IJupyterWidgetRegistry);
    if (!registry) {
      return false;
    }
    const { LiveStatusModel, LiveStatusView, LiveTextModel, LiveTextView, MODULE, VERSION } = await import(
      './livetext_widget'
    );
    registry.registerWidget({
      name: MODULE,
      version: VERSION,
      exports: { LiveStatusModel, LiveStatusView, LiveTextModel, LiveTextView }
    });
    return true;
  } catch (error) {
    console.warn('agentik: no ipywidgets manager; answers stream in its HTML widgets', error);
    return false;
  }
}

/** Answer the kernel's hello on every notebook kernel connection (see the module comment). */
function answerHellos(notebooks: INotebookTracker, liveText: boolean): void {
  forEachNotebookKernel(notebooks, (_panel, kernel) => {
    kernel.registerCommTarget(HELLO_TARGET, () => {
      // (the kernel closes both comms: the hello at once, the reply once read)
      kernel.createComm(REPLY_TARGET).open(liveText ? { live_text: 1, rewind: 1, panel: 1 } : { rewind: 1 });
    });
  });
}

export const liveTextPlugin: JupyterFrontEndPlugin<void> = {
  id: 'agentik-jupyter:live-text',
  description: 'Streams an agent answer append-only (each piece of it crosses once), and tells the kernel so.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: async (app: JupyterFrontEnd, notebooks: INotebookTracker) => {
    answerHellos(notebooks, await registerWidget(app));
  }
};
