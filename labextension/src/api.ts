/**
 * The data the extension reads: the transcript MIME payload (version 1) and the
 * server's session routes (GET /agentik/api/sessions[/<id>]), fetched through
 * ServerConnection so Jupyter's token and XSRF handling apply.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

export const TRANSCRIPT_MIME = 'application/vnd.agentik.transcript+json';

export interface IUserEntry {
  role: 'user';
  content: string;
}

export interface IAssistantEntry {
  role: 'assistant';
  content: string;
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

export type TranscriptEntry = IUserEntry | IAssistantEntry | IToolEntry | IErrorEntry;

export interface IUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
}

export interface ITranscript {
  version: number;
  title?: string | null;
  status?: string | null;
  usage?: IUsage | null;
  elapsed_s?: number | null;
  entries: TranscriptEntry[];
}

export interface ISessionInfo {
  id: string;
  title: string | null;
  is_temporal: boolean;
  created_at: number;
  updated_at: number;
  message_count: number;
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
}

async function getJSON<T>(route: string, query: Record<string, string>): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, 'agentik/api', route) + URLExt.objectToQueryString(query);
  const response = await ServerConnection.makeRequest(url, {}, settings);
  if (!response.ok) {
    throw new ServerConnection.ResponseError(response, `${response.status} ${response.statusText} for ${route}`);
  }
  return (await response.json()) as T;
}

/** The notebook's saved sessions, most recently updated first. */
export async function listSessions(notebookPath: string): Promise<ISessionInfo[]> {
  const body = await getJSON<{ sessions: ISessionInfo[] }>('sessions', { path: notebookPath });
  return body.sessions;
}

/** One page of a session's audit log, oldest first; `before` pages back. */
export function fetchHistory(
  notebookPath: string,
  sessionId: string,
  limit: number,
  before: number | null
): Promise<IHistoryPage> {
  const query: Record<string, string> = { path: notebookPath, limit: String(limit) };
  if (before !== null) {
    query.before = String(before);
  }
  return getJSON<IHistoryPage>(`sessions/${encodeURIComponent(sessionId)}`, query);
}
