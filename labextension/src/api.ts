/**
 * The data the extension reads: the transcript MIME payload (version 1) and the
 * server's sessions API (/agentik/api/sessions[/<id>], /agentik/api/events), called
 * through ServerConnection so Jupyter's token and XSRF handling apply.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

export const TRANSCRIPT_MIME = 'application/vnd.agentik.transcript+json';

export interface IUserEntry {
  role: 'user';
  content: string;
  /** The turn's mode (Ask, Auto, Plan) when it was not Agent, the default. */
  mode?: string;
}

export interface IAssistantEntry {
  role: 'assistant';
  content: string;
  /** An answer longer than its JSON start (over 200 characters): `content` is its start; the whole is the bundle's text/html element data-agentik-entry=<index>. */
  in_html?: boolean;
}

export interface IToolEntry {
  role: 'tool';
  id: string;
  name: string;
  args: Record<string, unknown>;
  result?: string | null;
  truncated?: number;
  error?: string | null;
  duration_ms?: number | null;
  display?: Record<string, string> | null;
}

export interface IErrorEntry {
  role: 'error';
  message: string;
  code?: string | null;
}

/** Something the user should know that is no failure (a deleted session: the turn starts a new one). */
export interface INoticeEntry {
  role: 'notice';
  message: string;
}

/** A proposed plan as its card, after its propose_plan call (agentik_jupyter/widgets/plan_card.py SavedPlan). */
export interface IPlanEntry {
  role: 'plan';
  id: string;
  steps: string[];
  status: ('done' | 'failed' | null)[];
  notes: string[];
  decision: 'approved' | 'denied' | 'timeout' | 'cancelled' | null;
  mode: 'agent' | 'auto' | null;
  edited: boolean;
  reason?: string | null;
}

export type TranscriptEntry = IUserEntry | IAssistantEntry | IToolEntry | IErrorEntry | INoticeEntry | IPlanEntry;

export interface IUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cached_tokens?: number | null;
  cache_write_tokens?: number | null;
}

export interface ITranscript {
  version: number;
  title?: string | null;
  status?: string | null;
  usage?: IUsage | null;
  elapsed_s?: number | null;
  /** Tool calls that failed (not those the user denied); only when > 0. */
  failed_tools?: number;
  /** The turn was rewound since (its cell's transcript was shown again): the footer says so. */
  rewound?: boolean;
  entries: TranscriptEntry[];
}

export interface ISessionInfo {
  id: string;
  title: string | null;
  is_temporal: boolean;
  created_at: number;
  updated_at: number;
  message_count: number;
  /** The session's mode as the user set it (ask, agent, auto, plan); null: the kernel's default. */
  mode?: string | null;
}

export interface IToolCall {
  id: string;
  name: string;
  args?: Record<string, unknown>;
}

export interface IToolResult {
  tool_call_id: string;
  name: string;
  result?: unknown;
  error?: string | null;
  display?: Record<string, unknown> | null;
  duration_ms?: number | null;
}

export type HistoryRecord =
  | { kind: 'user'; content: string }
  | { kind: 'assistant'; content: string; tool_calls?: IToolCall[] | null }
  | { kind: 'tool_call'; call: IToolCall }
  | { kind: 'tool_result'; result: IToolResult }
  | { kind: 'error'; message: string; code?: string | null };

export interface IHistoryEntry {
  seq: number;
  turn_id: string;
  created_at: number;
  record: HistoryRecord;
}

export interface IHistoryPage {
  entries: IHistoryEntry[];
  next_before_seq: number | null;
  next_after_seq?: number | null;
  session?: ISessionInfo;
}

export interface ISessionsPage {
  sessions: ISessionInfo[];
  offset: number;
  limit: number;
  total: number;
  /** The change position this page reflects: follow the events from here. */
  position: number;
  /** Rows of the file not listed because their id is not a session id (a crafted file). */
  hidden?: number;
}

/** One change to the notebook's sessions, as the events stream sends it. */
export interface ISessionEvent {
  /** mode: the session's mode changed (`session` carries it as it is now). */
  type: 'created' | 'renamed' | 'deleted' | 'message' | 'mode' | 'error';
  position: number;
  session_id: string;
  title?: string | null;
  session?: ISessionInfo;
  entry?: IHistoryEntry;
  message?: string;
}

const RECONNECT_MS = 1000;

function routeUrl(route: string, query: Record<string, string>): { url: string; settings: ServerConnection.ISettings } {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, 'agentik/api', route) + URLExt.objectToQueryString(query);
  return { url, settings };
}

async function request(route: string, query: Record<string, string>, init: RequestInit = {}): Promise<Response> {
  const { url, settings } = routeUrl(route, query);
  const response = await ServerConnection.makeRequest(url, init, settings);
  if (!response.ok) {
    let detail = `${response.status} ${response.statusText}`;
    try {
      const body = await response.json();
      detail = body.message || detail;
    } catch {
      // not JSON: keep the status line
    }
    throw new ServerConnection.ResponseError(response, `${detail} (${route})`);
  }
  return response;
}

async function getJSON<T>(route: string, query: Record<string, string>): Promise<T> {
  return (await (await request(route, query)).json()) as T;
}

/** One page of the notebook's saved sessions, most recently updated first. */
export function listSessionsPage(notebookPath: string, offset = 0, limit = 100): Promise<ISessionsPage> {
  return getJSON<ISessionsPage>('sessions', { path: notebookPath, offset: String(offset), limit: String(limit) });
}

/** The notebook's saved sessions (first page), most recently updated first. */
export async function listSessions(notebookPath: string): Promise<ISessionInfo[]> {
  return (await listSessionsPage(notebookPath)).sessions;
}

/** One page of a session's audit log, oldest first; `before` pages back, `after` reads forward. */
export function fetchHistory(
  notebookPath: string,
  sessionId: string,
  limit: number,
  before: number | null,
  after: number | null = null
): Promise<IHistoryPage> {
  const query: Record<string, string> = { path: notebookPath, limit: String(limit) };
  if (before !== null) {
    query.before = String(before);
  }
  if (after !== null) {
    query.after = String(after);
  }
  return getJSON<IHistoryPage>(`sessions/${encodeURIComponent(sessionId)}`, query);
}

/** Rename a session (a blank title clears it); the server bumps its updated_at. */
export async function renameSession(notebookPath: string, sessionId: string, title: string): Promise<ISessionInfo> {
  const response = await request(
    `sessions/${encodeURIComponent(sessionId)}`,
    { path: notebookPath },
    { method: 'PATCH', body: JSON.stringify({ title: title.trim() || null }) }
  );
  return (await response.json()) as ISessionInfo;
}

/** Delete a session and its messages. */
export async function deleteSession(notebookPath: string, sessionId: string): Promise<void> {
  await request(`sessions/${encodeURIComponent(sessionId)}`, { path: notebookPath }, { method: 'DELETE' });
}

function parseFrame(frame: string): ISessionEvent | null {
  const data = frame
    .split('\n')
    .filter(line => line.startsWith('data:'))
    .map(line => line.slice(5).trimStart())
    .join('\n');
  if (!data) {
    return null;
  }
  try {
    return JSON.parse(data) as ISessionEvent;
  } catch {
    return null;
  }
}

/**
 * Follow the notebook's session events from `position`, reconnecting from the last
 * position seen (so nothing is missed) until the returned function is called.
 */
export function followSessionEvents(
  notebookPath: string,
  position: number,
  onEvent: (event: ISessionEvent) => void
): () => void {
  const abort = new AbortController();
  let last = position;
  const run = async (): Promise<void> => {
    while (!abort.signal.aborted) {
      try {
        const response = await request(
          'events',
          { path: notebookPath, after: String(last) },
          { signal: abort.signal, headers: { Accept: 'text/event-stream' } }
        );
        const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) {
            break;
          }
          buffer += value.replace(/\r\n/g, '\n');
          let end = buffer.indexOf('\n\n');
          while (end >= 0) {
            const event = parseFrame(buffer.slice(0, end));
            buffer = buffer.slice(end + 2);
            end = buffer.indexOf('\n\n');
            if (event && event.type !== 'error') {
              last = Math.max(last, event.position);
              onEvent(event);
            }
          }
        }
      } catch (error) {
        if (abort.signal.aborted) {
          return;
        }
      }
      await new Promise(resolve => setTimeout(resolve, RECONNECT_MS));
    }
  };
  void run();
  return () => abort.abort();
}
