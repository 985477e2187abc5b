/**
 * The chat panel's conversation stays pinned to its newest line when the user is at the bottom.
 *
 * The panel's box is a reversed column (agentik_jupyter/widgets/panel.py): at scroll offset 0 the
 * browser keeps its bottom in view as an answer grows, and a user who scrolled up keeps their
 * place (scroll anchoring). With fractional line heights Chromium's bottom is offset +1, not 0, and
 * there it anchors as if the user were reading above: the answer streams out of view. Scrolled to
 * the bottom, the box is set to offset 0. One capture listener for the page: scroll events do
 * not bubble, and panels come and go with their outputs.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';

const TRANSCRIPT = 'agentik-panel-transcript';

function pinAtBottom(event: Event): void {
  const box = event.target;
  if (box instanceof HTMLElement && box.classList.contains(TRANSCRIPT) && box.scrollTop > 0) {
    box.scrollTop = 0;
  }
}

export const pinningPlugin: JupyterFrontEndPlugin<void> = {
  id: 'agentik-jupyter:pinning',
  description: "Keeps the chat panel's newest line in view when the user is at the bottom of its conversation.",
  autoStart: true,
  activate: (_app: JupyterFrontEnd) => {
    document.addEventListener('scroll', pinAtBottom, { capture: true, passive: true });
  }
};
