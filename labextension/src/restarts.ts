/** Tells a notebook's views that its kernel restarted, however the restart was asked for. */
import { NotebookPanel } from '@jupyterlab/notebook';
import { Event, KernelMessage } from '@jupyterlab/services';
import { ISignal, Signal } from '@lumino/signaling';

type SessionContext = NotebookPanel['sessionContext'];

/**
 * The statuses a page hears of a restart: 'restarting' when it asked for the restart itself,
 * 'autorestarting' when the server restarted a kernel that died, 'dead', and the new kernel's own
 * 'starting', the only sign of a restart asked elsewhere (another page, the REST API).
 */
const RESTART_STATUSES: ReadonlySet<string> = new Set(['restarting', 'autorestarting', 'starting', 'dead']);
/** Statuses only the kernel process sends (the server sends 'restarting' and 'dead' under its own session id). */
const KERNEL_STATUSES: ReadonlySet<string> = new Set(['starting', 'busy', 'idle']);
/** The Jupyter server's event for what its kernel manager did (start, restart, shutdown, interrupt). */
const KERNEL_ACTIONS = 'https://events.jupyter.org/jupyter_server/kernel_actions/v1';

/**
 * A notebook's kernel restarts. A page can miss the new kernel's 'starting' (its kernel websocket
 * reconnecting late), so this also watches the session id the kernel process signs its messages
 * with (a new process has a new one, while the kernel connection stays the same) and the server's
 * event that it restarted the kernel (which comes even when the page hears nothing of the new
 * kernel yet; a hidden page's events wait, so neither sign is enough alone).
 */
export class KernelRestarts {
  private readonly restartedSignal = new Signal<KernelRestarts, void>(this);
  /** The kernel process's session id, as last heard; null until a message of the current kernel comes. */
  private process: string | null = null;

  constructor(private readonly context: SessionContext) {
    watching.add(this);
    context.disposed.connect(() => watching.delete(this));
    context.statusChanged.connect(this.onStatus, this);
    context.iopubMessage.connect(this.onIopub, this);
    context.kernelChanged.connect(this.forget, this); // (another kernel is no restart)
  }

  /** Emitted once per restart noticed (a restart may be told twice: by its status, by a new process). */
  get restarted(): ISignal<KernelRestarts, void> {
    return this.restartedSignal;
  }

  private onStatus(_: unknown, status: string): void {
    if (RESTART_STATUSES.has(status)) {
      this.restart();
    }
  }

  /** The server says it restarted a kernel: this one's? */
  serverRestarted(kernelId: string): void {
    if (this.context.session?.kernel?.id === kernelId) {
      this.restart();
    }
  }

  private restart(): void {
    this.process = null; // (the next kernel's messages are not a second restart)
    this.restartedSignal.emit();
  }

  private onIopub(_: unknown, msg: KernelMessage.IMessage): void {
    if (!KernelMessage.isStatusMsg(msg) || !KERNEL_STATUSES.has(msg.content.execution_state)) {
      return;
    }
    const heard = msg.header.session;
    const before = this.process;
    this.process = heard;
    if (before !== null && heard && before !== heard) {
      this.restartedSignal.emit();
    }
  }

  private forget(): void {
    this.process = null;
  }
}

const watches = new WeakMap<SessionContext, KernelRestarts>();
const watching = new Set<KernelRestarts>();
const followed = new WeakSet<Event.IManager>();

/** Hear the server's kernel events (once per app, however many plugins ask). */
export function followServerEvents(events: Event.IManager): void {
  if (followed.has(events)) {
    return;
  }
  followed.add(events);
  events.stream.connect((_, event) => {
    const restarted = event.schema_id === KERNEL_ACTIONS && event.action === 'restart' && event.status === 'success';
    if (restarted && typeof event.kernel_id === 'string') {
      const kernelId = event.kernel_id;
      watching.forEach(watch => watch.serverRestarted(kernelId));
    }
  });
}

/** The restarts of this notebook's kernel (one watch per notebook, shared by its views). */
export function kernelRestarts(context: SessionContext): KernelRestarts {
  let watch = watches.get(context);
  if (!watch) {
    watch = new KernelRestarts(context);
    watches.set(context, watch);
  }
  return watch;
}
