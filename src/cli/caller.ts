// Who this CLI run is, for the audit rows of what it asks (operator commands, a restore): the run's request id
// (TOLLGATE_REQUEST_ID, or a new one) and the operator's login and host. Set once per run (src/main.ts).
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { AdminCaller } from '../admin/socket.js';
import { UsageError } from './errors.js';

let caller: AdminCaller = { requestId: randomUUID(), operator: 'unknown' };

/** Who this CLI run is (as identifyCaller set it). */
export function cliCaller(): AdminCaller {
  return caller;
}

/** Sets who this CLI run is: its request id from TOLLGATE_REQUEST_ID (refused when malformed) or a new one. */
export function identifyCaller(): void {
  const requestId = process.env.TOLLGATE_REQUEST_ID;
  if (requestId !== undefined && !/^[\w.:-]{1,128}$/.test(requestId)) throw new UsageError('TOLLGATE_REQUEST_ID must be 1-128 characters of [A-Za-z0-9_.:-]');
  caller = { requestId: requestId || randomUUID(), operator: operatorName() };
}

/** The operator's login (sudo's caller first) and host, as a header may carry it. */
function operatorName(): string {
  let user = process.env.SUDO_USER;
  try {
    user ||= os.userInfo().username;
  } catch {
    user ||= process.env.USER ?? 'unknown';
  }
  return `${user}@${os.hostname()}`.replace(/[^\w.@-]/g, '_').slice(0, 200);
}
