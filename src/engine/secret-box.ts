/**
 * Secret values at rest (README "Secrets"): AES-256-GCM under the server's key (WEFT_SECRET_KEY or
 * WEFT_SECRET_KEY_FILE), a fresh 96-bit nonce per value, and the secret's scope and name as associated
 * data, so that a sealed value copied onto another secret's row does not open there. A sealed value
 * names the key it was sealed with (a fingerprint, never the key), so that a server started with
 * another key says so instead of handing out garbage.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

const ALGORITHM = 'aes-256-gcm';
const NONCE_BYTES = 12;
const VERSION = 'v1';

export interface SecretKey {
  readonly bytes: Buffer;
  /** A fingerprint of the key: safe to store and to print. */
  readonly id: string;
}

export class SecretKeyError extends Error {}

/**
 * The key from its text: 32 bytes as 64 hex digits or as base64 (`openssl rand -base64 32`). Anything
 * else is refused with the way to make one: a passphrase would be a far weaker key than it looks.
 */
export function parseSecretKey(text: string, source: string): SecretKey {
  const t = text.trim();
  let bytes: Buffer | null = null;
  if (/^[0-9a-fA-F]{64}$/.test(t)) bytes = Buffer.from(t, 'hex');
  else if (/^[A-Za-z0-9+/_-]{43}=?$/.test(t)) bytes = Buffer.from(t.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (bytes === null || bytes.length !== 32) {
    throw new SecretKeyError(
      `${source} is not a 32-byte key: give 64 hex digits or 44 base64 characters, e.g. the output of \`openssl rand -base64 32\``,
    );
  }
  return { bytes, id: createHmac('sha256', bytes).update('weft secret key id').digest('hex').slice(0, 16) };
}

/** Binds a sealed value to its row: the scope ('' for every workflow) and the name. */
function aad(scope: string, name: string): Buffer {
  return Buffer.from(`${scope}\u0000${name}`, 'utf8');
}

/** `v1.<nonce>.<tag>.<ciphertext>`, each part base64. */
export function seal(key: SecretKey, scope: string, name: string, value: string): string {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv(ALGORITHM, key.bytes, nonce);
  cipher.setAAD(aad(scope, name));
  const body = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
  return [VERSION, nonce.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join('.');
}

/** The value, or a SecretKeyError saying why it does not open (another key, a damaged or moved row). */
export function open(key: SecretKey, scope: string, name: string, sealed: string): string {
  const [version, nonce, tag, body] = sealed.split('.');
  if (version !== VERSION || nonce === undefined || tag === undefined || body === undefined) {
    throw new SecretKeyError(`secret ${name} is stored in a form this server does not read (${String(version)})`);
  }
  try {
    const decipher = createDecipheriv(ALGORITHM, key.bytes, Buffer.from(nonce, 'base64'));
    decipher.setAAD(aad(scope, name));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretKeyError(`secret ${name} does not open with this server's key: it was stored with another key, or the row was altered`);
  }
}
