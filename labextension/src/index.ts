/**
 * agentik-jupyter: the "Agent sessions" sidebar and the cells the agent proposes.
 * The transcript renderer is the package's MIME extension (renderer.ts).
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import { gotoPlugin } from './goto';
import { offerFixes, serveNotebooks } from './notebook';
import { SessionsSidebar } from './sidebar';
import { liveTextPlugin } from './livetext';
import { pasteImagesPlugin } from './paste_images';
import { pinningPlugin } from './pinning';
import { panelPlugin } from './panel';
import { reattachPlugin } from './reattach';
import { rewindPlugin } from './rewind';

const sessionsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'agentik-jupyter:sessions',
  description: 'A left-area panel listing the agent sessions saved beside the current notebook.',
  autoStart: true,
  requires: [INotebookTracker, IRenderMimeRegistry],
  optional: [ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker,
    rendermime: IRenderMimeRegistry,
    restorer: ILayoutRestorer | null
  ) => {
    const sidebar = new SessionsSidebar(rendermime);
    const follow = (panel: NotebookPanel | null): void =>
      sidebar.setNotebook(panel?.context.localPath ?? null, () => panel?.sessionContext.session?.kernel);
    const followCurrent = (): void => follow(notebooks.currentWidget);
    notebooks.currentChanged.connect((_, panel) => {
      follow(panel);
      panel?.context.pathChanged.connect(followCurrent);
    });
    follow(notebooks.currentWidget);
    app.shell.add(sidebar, 'left', { rank: 650 });
    restorer?.add(sidebar, sidebar.id);
  }
};

const notebookPlugin: JupyterFrontEndPlugin<void> = {
  id: 'agentik-jupyter:notebook',
  description: 'The live notebook for the agent: its cells, proposed cells and edits (diffs to accept or reject), re-runs, "Fix with agent".',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, notebooks: INotebookTracker) => {
    serveNotebooks(notebooks);
    offerFixes();
  }
};

export default [
  sessionsPlugin,
  notebookPlugin,
  liveTextPlugin,
  gotoPlugin,
  pasteImagesPlugin,
  pinningPlugin,
  rewindPlugin,
  panelPlugin,
  reattachPlugin
];
