/**
 * A finished turn's plan, drawn as its card (no buttons): the steps as run, each ticked done (✓) or
 * failed (✗), and what the user decided. The same card as the kernel's (agentik_jupyter/widgets/
 * plan_card.py SavedPlan), from a saved transcript's plan entry or from the audit log's records:
 * propose_plan's result keeps the plan as decided (PLAN_MIME), and each plan_step call that
 * succeeded ticks a step.
 */
import { IPlanEntry } from './api';

/** In propose_plan's result display (agentik_jupyter/tools/plan.py PLAN_MIME). */
export const PLAN_MIME = 'application/vnd.agentik.plan+json';
const MARKS: Record<string, string> = { done: '✓', failed: '✗' };
const DECISIONS: Record<string, string> = {
  denied: '✗ Plan rejected: nothing ran',
  timeout: '✗ No answer in time: the plan did not run',
  cancelled: '■ Withdrawn: the turn was stopped'
};

function el(tag: string, className = '', text?: string): HTMLElement {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((s): s is string => typeof s === 'string') : [];
}

function oneLine(text: string): string {
  return text.split(/\s+/).filter(Boolean).join(' ');
}

/** The plan of one propose_plan call: as decided when its result says so, else as proposed. */
export function planEntry(
  id: string,
  args: Record<string, unknown> | undefined,
  display: Record<string, unknown> | null | undefined,
  error: string | null | undefined
): IPlanEntry {
  const record = display?.[PLAN_MIME] as Record<string, unknown> | undefined;
  const decided = record && typeof record === 'object' && Array.isArray(record.steps);
  const steps = strings(decided ? record.steps : args?.steps).map(oneLine).filter(Boolean);
  const decision = decided ? record.decision : error ? 'cancelled' : null;
  return {
    role: 'plan',
    id,
    steps,
    status: steps.map(() => null),
    notes: steps.map(() => ''),
    decision: typeof decision === 'string' ? (decision as IPlanEntry['decision']) : null,
    mode: decided && record.mode === 'auto' ? 'auto' : decided && record.decision === 'approved' ? 'agent' : null,
    edited: decided ? record.edited === true : false,
    reason: decided && typeof record.reason === 'string' ? record.reason : null
  };
}

/** What a plan_step call that succeeded reported. */
export function tick(plan: IPlanEntry, args: Record<string, unknown> | undefined): void {
  const step = args?.step;
  const status = args?.status;
  if (typeof step === 'number' && Number.isInteger(step) && step >= 1 && step <= plan.steps.length) {
    if (status === 'done' || status === 'failed') {
      plan.status[step - 1] = status;
      plan.notes[step - 1] = typeof args?.note === 'string' ? oneLine(args.note).slice(0, 300) : '';
    }
  }
}

function outcome(plan: IPlanEntry): string {
  if (plan.decision === 'approved') {
    return `▶ Running the plan in ${plan.mode === 'auto' ? 'Auto' : 'Agent'}${plan.edited ? ', as edited' : ''}`;
  }
  const said = DECISIONS[plan.decision ?? ''];
  if (!said) {
    return 'Waiting for the user: nothing ran';
  }
  const why = plan.decision === 'denied' && plan.reason && plan.reason !== 'denied by the user';
  return why ? `${said} (${plan.reason})` : said;
}

/** The card; every string of the entry is untrusted and goes in as text. */
export function planCard(plan: IPlanEntry): HTMLElement {
  const steps = strings(plan.steps);
  const status = Array.isArray(plan.status) ? plan.status : [];
  const notes = Array.isArray(plan.notes) ? plan.notes : [];
  const card = el('div', 'agentik-approval agentik-plan agentik-approval-done');
  const head = el('div');
  head.append(el('b', '', 'Plan'), ` (${steps.length} step${steps.length === 1 ? '' : 's'}): nothing runs until you run it.`);
  const list = el('ol', 'agentik-plan-steps');
  steps.forEach((step, n) => {
    const state = status[n] === 'done' || status[n] === 'failed' ? status[n] : null;
    const item = el('li', `agentik-step agentik-step-${state ?? 'todo'}`, `${state ? MARKS[state] : '☐'} ${step}`);
    const note = typeof notes[n] === 'string' ? notes[n] : '';
    if (note) {
      item.append(' ', el('em', '', `— ${note}`));
    }
    list.appendChild(item);
  });
  const decided = el('div');
  decided.appendChild(el('b', '', outcome(plan)));
  card.append(head, list, decided);
  return card;
}
