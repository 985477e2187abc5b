/**
 * The LiveText model and view (see livetext.ts). Loaded only when ipywidgets' manager is
 * there: this module needs @jupyter-widgets/base, and the rest of the extension does not.
 */
import { DOMWidgetModel, DOMWidgetView } from '@jupyter-widgets/base';

import { allowListed } from './safehtml';

export const MODULE = 'agentik-jupyter';
export const VERSION = '0.1.0';
const CLASSES = ['agentik-assistant', 'agentik-live-text', 'jp-RenderedHTMLCommon', 'jp-RenderedMarkdown'];

/** The kernel's change: keep the first `k` characters shown, add `a`; the first `s` are finished. */
interface IAppend {
  k: number;
  a: string;
  s: number;
}

function isAppend(data: unknown): data is IAppend {
  const d = data as IAppend | null;
  return !!d && Number.isInteger(d.k) && typeof d.a === 'string' && Number.isInteger(d.s) && d.k >= 0 && d.s >= 0;
}

/** Clean `html` and parse it into nodes (inert until inserted). */
function nodesOf(html: string): Node[] {
  if (!html) {
    return [];
  }
  const template = document.createElement('template');
  template.innerHTML = allowListed(html);
  return Array.from(template.content.childNodes);
}

export class LiveTextModel extends DOMWidgetModel {
  defaults(): any {
    return {
      ...super.defaults(),
      _model_name: 'LiveTextModel',
      _view_name: 'LiveTextView',
      _model_module: MODULE,
      _view_module: MODULE,
      _model_module_version: `^${VERSION}`,
      _view_module_version: `^${VERSION}`,
      value: '',
      tail: '',
      head: ''
    };
  }

  initialize(attributes: any, options: any): void {
    super.initialize(attributes, options);
    this.on('msg:custom', (data: unknown) => this.onAppend(data));
  }

  /** Apply the kernel's change; the views get the finished HTML added and the new tail. */
  private onAppend(data: unknown): void {
    if (!isAppend(data)) {
      return;
    }
    const value = this.get('value') as string;
    const whole = (value + (this.get('tail') as string)).slice(0, data.k) + data.a;
    const stable = Math.min(data.s, whole.length);
    if (data.k < value.length || stable < value.length) {
      // (never sent by the kernel: finished HTML would change; show the whole anew)
      this.set({ value: whole.slice(0, stable), tail: whole.slice(stable) });
      return;
    }
    const added = whole.slice(value.length, stable);
    const tail = whole.slice(stable);
    this.set({ value: whole.slice(0, stable), tail }, { silent: true });
    this.trigger('agentik:append', added, tail);
  }
}

export class LiveTextView extends DOMWidgetView {
  private tailNodes: Node[] = [];
  /** Where the answer's nodes go: the view itself, or below the `head` (a turn's question). */
  private body!: HTMLElement;

  render(): void {
    this.body = this.el;
    const head = this.model.get('head') as string;
    if (head) {
      // (the question opens with the view, as one widget; the answer streams below it)
      const top = document.createElement('div');
      top.append(...nodesOf(head));
      this.body = document.createElement('div');
      this.el.append(top, this.body);
    }
    this.body.classList.add(...CLASSES);
    this.renderAll();
    this.listenTo(this.model, 'change:value change:tail', () => this.renderAll());
    this.listenTo(this.model, 'agentik:append', (added: string, tail: string) => this.append(added, tail));
  }

  /** The whole state (when the widget opens, or the kernel made it exact). */
  private renderAll(): void {
    this.body.replaceChildren(...nodesOf(this.model.get('value') as string));
    this.tailNodes = [];
    this.setTail(this.model.get('tail') as string);
  }

  private append(added: string, tail: string): void {
    for (const node of this.tailNodes) {
      node.parentNode?.removeChild(node);
    }
    this.tailNodes = [];
    this.body.append(...nodesOf(added));
    this.setTail(tail);
  }

  private setTail(tail: string): void {
    this.tailNodes = nodesOf(tail);
    this.body.append(...this.tailNodes);
    if (this.body !== this.el) {
      this.body.hidden = !this.body.hasChildNodes(); // (no answer yet: no empty answer box)
    }
  }
}

/** A turn's status line and Stop (agentik_jupyter/widgets/live_status.py): one widget, not three. */
export class LiveStatusModel extends DOMWidgetModel {
  defaults(): any {
    return {
      ...super.defaults(),
      _model_name: 'LiveStatusModel',
      _view_name: 'LiveStatusView',
      _model_module: MODULE,
      _view_module: MODULE,
      _model_module_version: `^${VERSION}`,
      _view_module_version: `^${VERSION}`,
      value: '',
      disabled: false
    };
  }
}

/**
 * Drawn as ipywidgets draws the HBox of an HTML widget and a Button it replaces (their classes,
 * so the same styles apply): the line takes the room, Stop sits at its right. The line's HTML
 * is the kernel's (its text escaped there), shown as ipywidgets' HTML widget shows it.
 */
export class LiveStatusView extends DOMWidgetView {
  private line!: HTMLElement;
  private stop!: HTMLButtonElement;

  render(): void {
    this.el.classList.add('widget-container', 'widget-box', 'widget-hbox', 'agentik-live-status');
    const html = document.createElement('div');
    html.classList.add('jupyter-widgets', 'widget-inline-hbox', 'widget-html');
    html.style.flex = '1 1 auto';
    this.line = document.createElement('div');
    this.line.classList.add('widget-html-content');
    html.append(this.line);
    this.stop = document.createElement('button');
    this.stop.type = 'button';
    this.stop.classList.add('jupyter-widgets', 'jupyter-button', 'widget-button', 'agentik-button');
    this.stop.title = 'Stop this turn';
    const icon = document.createElement('i');
    icon.classList.add('fa', 'fa-stop');
    this.stop.append(icon, 'Stop');
    this.stop.addEventListener('click', event => {
      event.preventDefault();
      if (!this.stop.disabled) {
        this.send({ event: 'stop' });
      }
    });
    this.el.append(html, this.stop);
    this.update();
  }

  update(): void {
    this.line.innerHTML = this.model.get('value') as string;
    this.stop.disabled = !!this.model.get('disabled');
  }
}
