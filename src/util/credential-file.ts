import { statSync } from 'node:fs';

/**
 * Why a file holding credentials is too open, or null: readable or writable by its group or by
 * others (a writable tokens file lets anyone add a token of their own). `variable` names the setting.
 */
export function credentialFileWarning(variable: string, file: string): string | null {
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch {
    // Reading it is what reports a missing file.
    return null;
  }
  if ((mode & 0o077) === 0) return null;
  const octal = (mode & 0o777).toString(8).padStart(3, '0');
  return `${variable}="${file}" is accessible to its group or to other users (mode ${octal}): make it readable by this process's user alone (chmod 600)`;
}
