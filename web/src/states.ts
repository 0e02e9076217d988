// states.ts - instance states: their labels, their order, and the actions a
// person may take on each. Colours live in styles.css (.st-<state>) so a
// state looks the same in badges, tables, graphs and charts; graph and chart
// code reads the same palette through stateColor() (fills) and stateInk()
// (text).
import type { Action, State } from './api';

export const STATES: State[] = [
  'waiting',
  'ready',
  'dispatched',
  'running',
  'success',
  'failed',
  'killed',
  'timed_out',
  'suspended',
  'marked_success',
];

export const STATE_LABEL: Record<State, string> = {
  waiting: 'Waiting',
  ready: 'Ready',
  dispatched: 'Dispatched',
  running: 'Running',
  success: 'Success',
  failed: 'Failed',
  killed: 'Killed',
  timed_out: 'Timed out',
  suspended: 'Suspended',
  marked_success: 'Marked success',
};

/**
 * The palette, shared with styles.css (keep in step). A state's fill (dots,
 * bars, graph borders) is at least 3:1 on white; its ink (text in that
 * state's colour) at least 5:1 on white and on the state's own tint (the
 * fill at 14% on white), so WCAG 2.1 AA's 4.5:1 for text holds with room.
 */
export const STATE_COLOR: Record<State, string> = {
  waiting: '#8a94a6',
  ready: '#5b8def',
  dispatched: '#3f74e0',
  running: '#1f5fd6',
  success: '#23a55a',
  failed: '#e0453a',
  killed: '#2f3542',
  timed_out: '#d97706',
  suspended: '#8e5bd6',
  marked_success: '#139c96',
};

export const STATE_INK: Record<State, string> = {
  waiting: '#5b626e',
  ready: '#3d5ea0',
  dispatched: '#3159ac',
  running: '#194cab',
  success: '#176d3b',
  failed: '#a4322a',
  killed: '#262a35',
  timed_out: '#8a4d04',
  suspended: '#6f47a7',
  marked_success: '#0d6a66',
};

/** No state (never ran): fill and ink. */
export const NONE_COLOR = '#b6bcc8';
export const NONE_INK = '#5c6068';

export function stateColor(s: State | null | undefined): string {
  return s ? STATE_COLOR[s] : NONE_COLOR;
}

export function stateInk(s: State | null | undefined): string {
  return s ? STATE_INK[s] : NONE_INK;
}

export const FINISHED: State[] = ['success', 'failed', 'killed', 'timed_out', 'marked_success'];

export function isFinished(s: State): boolean {
  return FINISHED.includes(s);
}

/** Mirrors galaxyd's rules (gx_api_instances.c); the server has the last word. */
export function actionAllowed(a: Action, s: State): boolean {
  switch (a) {
    case 'rerun':
      return isFinished(s);
    case 'suspend':
      return s === 'waiting' || s === 'ready';
    case 'resume':
      return s === 'suspended';
    case 'mark-success':
      return s !== 'success' && s !== 'marked_success';
    case 'kill':
      return ['waiting', 'ready', 'dispatched', 'running', 'suspended'].includes(s);
  }
}

export const ACTION_LABEL: Record<Action, string> = {
  rerun: 'Rerun',
  suspend: 'Suspend',
  resume: 'Resume',
  'mark-success': 'Mark success',
  kill: 'Kill',
};

/** Actions that ask for confirmation first. */
export const CONFIRM_ACTIONS: Action[] = ['rerun', 'mark-success', 'kill'];
