/**
 * Paste or drop images into the agent chat panel: they go where the panel's Image button puts a
 * picked file (agentik_jupyter/widgets/attach_images.py), so they are fitted, shown as thumbnails
 * and sent with the next question exactly as picked ones are.
 *
 * The Image button is an ipywidgets FileUpload: its view keeps a detached `<input type=file>` and
 * reads the files from that input's `change` event when the button's click opens it. For a paste
 * or a drop we click the button with the input's `click` answered by us, for that one synchronous
 * call: the files are set on the input and `change` is dispatched instead of a file dialog. Without
 * this extension (or if a future FileUpload works otherwise) the button itself still works.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';

const PANEL = '.agentik-panel';
const ATTACH = '.agentik-attach';
const KINDS = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

function imageFiles(data: DataTransfer | null): File[] {
  return Array.from(data?.files ?? []).filter(file => KINDS.includes(file.type));
}

function panelOf(target: EventTarget | null): Element | null {
  return target instanceof Element ? target.closest(PANEL) : null;
}

/** Hand `files` to the panel's Image button; false when the panel has none (an older kernel side). */
export function attachToPanel(panel: Element, files: File[]): boolean {
  const button = panel.querySelector<HTMLElement>(ATTACH);
  if (!button || files.length === 0) {
    return false;
  }
  const transfer = new DataTransfer();
  files.forEach(file => transfer.items.add(file));
  const click = HTMLInputElement.prototype.click;
  let taken = false;
  HTMLInputElement.prototype.click = function (this: HTMLInputElement): void {
    if (this.type !== 'file') {
      click.call(this);
      return;
    }
    taken = true;
    this.files = transfer.files;
    this.dispatchEvent(new Event('change'));
  };
  try {
    button.click();
  } finally {
    HTMLInputElement.prototype.click = click;
  }
  return taken;
}

function hasFiles(event: DragEvent): boolean {
  return Array.from(event.dataTransfer?.types ?? []).includes('Files');
}

export function watchPanelImages(root: Document): void {
  root.addEventListener(
    'paste',
    event => {
      const panel = panelOf(event.target);
      const files = imageFiles(event.clipboardData);
      if (panel && files.length && attachToPanel(panel, files)) {
        event.preventDefault(); // an image, not its file name, goes with the question
        event.stopPropagation(); // and the notebook does not paste cells
      }
    },
    true
  );
  root.addEventListener(
    'dragover',
    event => {
      if (panelOf(event.target) && hasFiles(event)) {
        event.preventDefault(); // the panel takes a dropped file
        event.stopPropagation();
      }
    },
    true
  );
  root.addEventListener(
    'drop',
    event => {
      const panel = panelOf(event.target);
      if (panel && hasFiles(event)) {
        event.preventDefault(); // the browser would open the file in place of JupyterLab
        event.stopPropagation();
        attachToPanel(panel, imageFiles(event.dataTransfer));
      }
    },
    true
  );
}

export const pasteImagesPlugin: JupyterFrontEndPlugin<void> = {
  id: 'agentik-jupyter:paste-images',
  description: 'Paste or drop images into the agent chat panel: they go with the next question.',
  autoStart: true,
  activate: (_app: JupyterFrontEnd) => {
    watchPanelImages(document);
  }
};
