/**
 * Errors the engine raises for the caller to see. Each carries a short machine code and an HTTP
 * status so the HTTP layer maps them without knowing engine internals.
 */
export class WeftError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'WeftError';
  }
}

export const notFound = (code: string, message: string, details?: Record<string, unknown>) =>
  new WeftError(404, code, message, details);
export const conflict = (code: string, message: string, details?: Record<string, unknown>) =>
  new WeftError(409, code, message, details);
export const invalid = (code: string, message: string, details?: Record<string, unknown>) =>
  new WeftError(400, code, message, details);
