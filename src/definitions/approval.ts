/**
 * `approval:` of a job (README "Approvals"): `{message?, timeout_secs?}`, or `true` for a gate with
 * neither. Every problem is reported under the job and field the user wrote.
 */
import { MAX_APPROVAL_MESSAGE_CHARS, MAX_APPROVAL_TIMEOUT_SECS } from '../domain/approval.js';
import type { ApprovalSpec } from '../domain/model.js';
import { type At, checkKeys, child, describe, isAbsent, isPlainObject, readInt, readString } from './values.js';

const APPROVAL_KEYS = ['message', 'timeout_secs'] as const;
const APPROVAL_ALIASES: Readonly<Record<string, string>> = {
  description: 'message',
  prompt: 'message',
  timeout: 'timeout_secs',
  timeout_minutes: 'timeout_secs',
  wait_timeout: 'timeout_secs',
};

/** The gate, or undefined for `approval: false` and for a value with problems (reported). */
export function readApproval(value: unknown, at: At): ApprovalSpec | undefined {
  if (value === true) return { message: null, timeout_secs: null };
  if (value === false) return undefined;
  if (!isPlainObject(value)) {
    at.issues.add(at.job, at.field, `must be true or an object {message?, timeout_secs?}, got ${describe(value)}`);
    return undefined;
  }
  const before = at.issues.list.length;
  checkKeys(value, APPROVAL_KEYS, (key, message) => at.issues.add(at.job, child(at, key).field, message), APPROVAL_ALIASES);
  let message: string | null = null;
  if (!isAbsent(value.message)) {
    const text = readString(value.message, child(at, 'message'));
    if (text !== undefined && text.length > MAX_APPROVAL_MESSAGE_CHARS) {
      at.issues.add(at.job, child(at, 'message').field, `must be at most ${MAX_APPROVAL_MESSAGE_CHARS} characters, got ${text.length}`);
    } else if (text !== undefined && text.trim() !== '') {
      message = text;
    }
  }
  let timeout: number | null = null;
  if (!isAbsent(value.timeout_secs)) {
    const secs = readInt(value.timeout_secs, child(at, 'timeout_secs'), 1);
    if (secs !== undefined && secs > MAX_APPROVAL_TIMEOUT_SECS) {
      at.issues.add(at.job, child(at, 'timeout_secs').field, `must be at most ${MAX_APPROVAL_TIMEOUT_SECS} (30 days), got ${secs}`);
    } else if (secs !== undefined) {
      timeout = secs;
    }
  }
  return at.issues.list.length === before ? { message, timeout_secs: timeout } : undefined;
}
