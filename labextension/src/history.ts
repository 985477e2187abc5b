/**
 * A session's audit log as the sidebar draws it: records become transcript entries, rows
 * are grouped by turn, and a page put in front of what is shown joins a turn it cut in two.
 */
import { HistoryRecord, IHistoryEntry, IPlanEntry, IToolCall, IToolEntry, TranscriptEntry } from './api';
import { planEntry, tick } from './plan';

/** Plan mode's tools (agentik_jupyter/tools/modes.py PLAN_TOOL, STEP_TOOL). */
const PLAN_TOOL = 'propose_plan';
const STEP_TOOL = 'plan_step';
const PREVIEW_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'text/html'];
/** Where what was attached for the model (@mentions, a fix's details) begins: the user sees their question only. */
const ATTACHED = '\n\nAttached by ';

function shownQuestion(content: string): string {
  const at = content.indexOf(ATTACHED);
  return at === -1 ? content : content.slice(0, at);
}

function resultText(value: unknown): string {
  if (value === null || value === undefined) {
    return '';
  }
  return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
}

function displayPayload(display: Record<string, unknown> | null | undefined): Record<string, string> | null {
  const kept = Object.entries(display ?? {}).filter(
    ([mime, data]) => PREVIEW_TYPES.includes(mime) && typeof data === 'string'
  );
  return kept.length ? (Object.fromEntries(kept) as Record<string, string>) : null;
}

/** Audit-log records -> transcript entries: each tool call one card, its result filled in; a
 * propose_plan call is followed by its plan's card, ticked by the plan_step calls that succeeded. */
export function historyEntries(records: HistoryRecord[]): TranscriptEntry[] {
  const entries: TranscriptEntry[] = [];
  const tools = new Map<string, IToolEntry>();
  let running: IPlanEntry | null = null;
  const card = (call: IToolCall): IToolEntry => {
    let tool = tools.get(call.id);
    if (!tool) {
      tool = { role: 'tool', id: call.id, name: call.name, args: call.args ?? {}, result: null, error: null };
      tools.set(call.id, tool);
      entries.push(tool);
    }
    return tool;
  };
  for (const record of records) {
    switch (record.kind) {
      case 'user':
        entries.push({ role: 'user', content: shownQuestion(record.content) });
        break;
      case 'assistant':
        if (record.content) {
          entries.push({ role: 'assistant', content: record.content });
        }
        (record.tool_calls ?? []).forEach(card);
        break;
      case 'tool_call':
        card(record.call);
        break;
      case 'tool_result': {
        const r = record.result;
        const tool = card({ id: r.tool_call_id, name: r.name });
        Object.assign(tool, {
          result: r.error ? null : resultText(r.result),
          error: r.error ?? null,
          duration_ms: r.duration_ms ?? null,
          display: displayPayload(r.display)
        });
        if (r.name === PLAN_TOOL) {
          const plan = planEntry(r.tool_call_id, tool.args, r.display, r.error);
          entries.splice(entries.indexOf(tool) + 1, 0, plan);
          running = plan.decision === 'approved' ? plan : running;
        } else if (r.name === STEP_TOOL && !r.error && running) {
          tick(running, tool.args);
        }
        break;
      }
      case 'error':
        entries.push({ role: 'error', message: record.message, code: record.code ?? null });
        break;
    }
  }
  return entries;
}

export function turns(page: IHistoryEntry[]): IHistoryEntry[][] {
  const grouped: IHistoryEntry[][] = [];
  for (const entry of page) {
    const last = grouped[grouped.length - 1];
    if (last && last[0].turn_id === entry.turn_id) {
      last.push(entry);
    } else {
      grouped.push([entry]);
    }
  }
  return grouped;
}

/**
 * The rows to draw when `page` goes in front of the turn shown first (`firstTurn`, drawn from
 * `firstRows`): if the page ends inside that turn, the turn's rows join the page and its node
 * is replaced (`replaces`), so a turn is never drawn as two halves.
 */
export function prependPage(
  page: IHistoryEntry[],
  firstTurn: string | undefined,
  firstRows: IHistoryEntry[] | undefined
): { entries: IHistoryEntry[]; replaces: boolean } {
  const last = page[page.length - 1];
  if (!last || !firstTurn || !firstRows || last.turn_id !== firstTurn) {
    return { entries: page, replaces: false };
  }
  const seen = new Set(page.map(e => e.seq));
  return { entries: [...page, ...firstRows.filter(e => !seen.has(e.seq))], replaces: true };
}
