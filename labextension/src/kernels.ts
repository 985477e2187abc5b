/**
 * Each open notebook's kernel connection, once, including kernels a notebook switches to later:
 * the comm target the kernel side opens (agentik.notebook) is registered there.
 */
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel } from '@jupyterlab/services';

export function forEachNotebookKernel(
  notebooks: INotebookTracker,
  listen: (panel: NotebookPanel, kernel: Kernel.IKernelConnection) => void
): void {
  const seen = new WeakSet<Kernel.IKernelConnection>();
  const attach = (panel: NotebookPanel): void => {
    const kernel = panel.sessionContext.session?.kernel;
    if (kernel && !seen.has(kernel)) {
      seen.add(kernel);
      listen(panel, kernel);
    }
  };
  const follow = (panel: NotebookPanel): void => {
    panel.sessionContext.kernelChanged.connect(() => attach(panel));
    void panel.sessionContext.ready.then(() => attach(panel));
    attach(panel);
  };
  notebooks.widgetAdded.connect((_, panel) => follow(panel));
  notebooks.forEach(follow);
}
