// session.ts - who is logged in, shared by every page through a context.
// The session itself is the HttpOnly cookie galaxyd sets; the UI only keeps
// the answer of /auth/me to decide what to show (the server decides what is
// allowed).
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Me } from './api';

export const SessionContext = createContext<Me | null>(null);

export function useMe(): Me {
  const me = useContext(SessionContext);
  if (!me) throw new Error('useMe outside a session');
  return me;
}

/** May this user change tasks of team? (Mirrors galaxyd's rule.) */
export function canEditTeam(me: Me, team: string): boolean {
  return me.role === 'admin' || (me.role === 'developer' && me.teams.includes(team));
}

export function canAct(me: Me): boolean {
  return me.role === 'admin' || me.role === 'developer';
}
