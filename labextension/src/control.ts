/**
 * The sidebar's requests to the notebook's kernel, over the `agentik.control` comm: never code.
 * ("Continue here" used to run `%agent resume ID` with an id read from the sessions file; a
 * shipped file whose id held a newline and Python ran that Python.) One comm per request: the
 * request is the open message's data; the kernel answers once and closes. A kernel without
 * the extension has no such target and closes the comm unanswered.
 * "Fix with agent" starts its fix turn the same way (`fix`), so no `%agent fix` cell is left behind.
 */
import { JSONObject } from '@lumino/coreutils';
import type * as nbformat from '@jupyterlab/nbformat';
import { Kernel } from '@jupyterlab/services';

import { el } from './renderer';

export const CONTROL_TARGET = 'agentik.control';
/** The only code the sidebar ever runs: fixed text, nothing from the sessions file. */
export const LOAD_CODE = '%load_ext agentik_jupyter';
/**
 * The one rule for an id that travels to the kernel, a session's or a cell's (JupyterLab's cell
 * ids are uuids): a plain token, as agentik_jupyter/ids.py's SESSION_ID_PATTERN; the server and
 * the kernel check the same.
 */
const ID = /^[A-Za-z0-9_-]{1,64}$/;

function isId(value: unknown): value is string {
  return typeof value === 'string' && ID.test(value);
}

/** Whether `value` may be a session id. */
export const isSessionId = isId;
/** Whether `value` may be a cell id the kernel accepts. */
export const isCellId = isId;

/**
 * The button offered when the kernel has no agentik loaded: it runs the fixed `LOAD_CODE`
 * (nothing from a file in it), then `retry` (the sidebar's Continue here, Fix with agent).
 * `kernel` is read at the click, the kernel `retry` will ask too (the user may have switched
 * notebook or restarted since the offer); the button is disabled while it loads, so a double
 * click loads once. `say` tells the user what happens meanwhile, failures included.
 */
export function loadThenRetry(
  kernel: () => Kernel.IKernelConnection | null | undefined,
  then: string,
  retry: () => Promise<void>,
  say: (text: string) => void
): HTMLButtonElement {
  const label = `Load it (${LOAD_CODE})${then}`;
  const load = el('button', 'jp-Button jp-mod-styled agentik-load-extension', label) as HTMLButtonElement;
  load.type = 'button';
  load.addEventListener('click', () => {
    const target = kernel();
    if (!target) {
      say('This notebook has no running kernel: start one, then try again.');
      return;
    }
    load.disabled = true;
    say('Loading the agentik extension in the kernel\u2026');
    void (async () => {
      try {
        const reply = await target.requestExecute({ code: LOAD_CODE, silent: true, store_history: false }).done;
        if (reply.content.status !== 'ok') {
          say(`Could not load the extension in the kernel (${reply.content.status}).`);
          return;
        }
        await retry();
      } catch (error) {
        say(`Could not load the extension in the kernel: ${(error as Error).message}`);
      } finally {
        load.disabled = false;
      }
    })();
  });
  return load;
}

export type ControlRequest =
  | { action: 'resume'; id: string }
  | { action: 'active' }
  | { action: 'fix'; cell_id: string }
  | { action: 'rewind_state' | 'rewind_preview' | 'rewind'; session: string; turn: string }
  | { action: 'rewind_states'; turns: { session: string; turn: string }[] }
  | { action: 'panel_live'; model_id: string }
  | { action: 'live_cells' };

/** `live_cells`: what one agent cell shows now (agentik_jupyter/kernel/live_cells.py). */
export interface ICellShown {
  cell_id: string;
  /** The id of the request whose messages update the cell. */
  parent: string;
  /** The turn has ended (a page shows it only where the cell shows nothing). */
  ended: boolean;
  outputs: { output: nbformat.IOutput; display_id: string | null }[];
}

export interface IControlAnswer {
  ok: boolean;
  error?: string;
  id?: string | null;
  title?: string | null;
  message_count?: number;
  /** A turn's Rewind (rewind.ts): its state, why it cannot be rewound, the preview's or printout's lines. */
  state?: string;
  note?: string | null;
  lines?: string[];
  /** `rewind_states`: each turn's answer, in the order asked. */
  states?: IControlAnswer[];
  /** `panel_live`: the chat panel's widget still lives in the kernel. */
  live?: boolean;
  /** `live_cells`: each agent cell's outputs as the kernel keeps them. */
  cells?: ICellShown[];
}

/** The kernel closed the comm without answering: the agentik extension is not loaded there. */
export class NotLoadedError extends Error {
  constructor() {
    super('The agentik extension is not loaded in this notebook\u2019s kernel.');
  }
}

/** No answer in time: the kernel is busy (a long cell runs) or gone. */
export class NoAnswerError extends Error {
  constructor(seconds: number) {
    super(`The kernel did not answer within ${seconds} s (is a cell still running?).`);
  }
}

function isCellShown(value: unknown): value is ICellShown {
  const cell = value as ICellShown | null;
  return (
    !!cell &&
    isCellId(cell.cell_id) &&
    typeof cell.parent === 'string' &&
    typeof cell.ended === 'boolean' &&
    Array.isArray(cell.outputs) &&
    cell.outputs.every(
      o =>
        !!o &&
        typeof o.output === 'object' &&
        o.output !== null &&
        typeof o.output.output_type === 'string' &&
        (o.display_id === null || typeof o.display_id === 'string')
    )
  );
}

function parse(data: unknown): IControlAnswer {
  const answer = (data ?? {}) as Record<string, unknown>;
  if (typeof answer.ok !== 'boolean') {
    return { ok: false, error: 'The kernel sent an answer the sidebar does not understand.' };
  }
  return {
    ok: answer.ok,
    error: typeof answer.error === 'string' ? answer.error : undefined,
    id: isSessionId(answer.id) ? answer.id : null,
    title: typeof answer.title === 'string' ? answer.title : null,
    message_count: typeof answer.message_count === 'number' ? answer.message_count : undefined,
    state: typeof answer.state === 'string' ? answer.state : undefined,
    note: typeof answer.note === 'string' ? answer.note : null,
    lines: Array.isArray(answer.lines) ? answer.lines.filter((l): l is string => typeof l === 'string') : undefined,
    states: Array.isArray(answer.states) ? answer.states.map(parse) : undefined,
    live: answer.live === true,
    cells: Array.isArray(answer.cells) ? answer.cells.filter(isCellShown) : undefined
  };
}

/**
 * Send one request to the kernel's control target; its answer (rejects: NotLoadedError, NoAnswerError).
 * `onSent` gets the open message's id: what the kernel displays while it acts has it as parent.
 */
export function askKernel(
  kernel: Kernel.IKernelConnection,
  request: ControlRequest,
  timeoutMs = 15_000,
  onSent?: (msgId: string) => void
): Promise<IControlAnswer> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (done: () => void): void => {
      if (!settled) {
        settled = true;
        window.clearTimeout(timer);
        done();
      }
    };
    const timer = window.setTimeout(() => settle(() => reject(new NoAnswerError(timeoutMs / 1000))), timeoutMs);
    try {
      const comm = kernel.createComm(CONTROL_TARGET);
      comm.onMsg = msg => settle(() => resolve(parse(msg.content.data)));
      comm.onClose = () => settle(() => reject(new NotLoadedError()));
      const future = comm.open(request as unknown as JSONObject);
      onSent?.(future.msg.header.msg_id);
    } catch (error) {
      settle(() => reject(error));
    }
  });
}
