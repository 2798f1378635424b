import { Ajv, type ErrorObject, type Options } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';
import { NO_CONTROL_CHARACTERS } from '../protocol/schema-parts.js';

/**
 * Bodies are validated strictly: a wrong type is an error, never coerced ("30" is not 30), and an
 * unknown field is an error, never dropped, so a typo cannot pass silently. Query strings and path
 * parameters arrive as text and are coerced to the declared types.
 */
const common: Options = { allErrors: true, useDefaults: true, removeAdditional: false, strict: false };
const bodyAjv = new Ajv({ ...common, coerceTypes: false });
const textAjv = new Ajv({ ...common, coerceTypes: true });

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  (httpPart === 'body' ? bodyAjv : textAjv).compile(schema as object);

/** One readable sentence per problem, e.g. `body.lease_ttl_secs must be integer`. */
export function describeValidationErrors(part: string, errors: ErrorObject[]): string {
  const parts = errors.flatMap((e) => {
    const where = `${part}${e.instancePath.replace(/\//g, '.')}`;
    // A bad key is reported by the key's own rule (with the key); ajv's summary adds nothing.
    if (e.keyword === 'propertyNames') return [];
    if (e.propertyName !== undefined) return [`${where} has a key ${quote(e.propertyName)} that ${e.message ?? 'is invalid'}`];
    switch (e.keyword) {
      case 'pattern':
        if ((e.params as { pattern: string }).pattern === NO_CONTROL_CHARACTERS) {
          return `${where} must not contain control characters (U+0000 to U+001F, U+007F)`;
        }
        return `${where} ${e.message ?? 'is invalid'}`;
      case 'additionalProperties':
        return `${where} has unknown field "${(e.params as { additionalProperty: string }).additionalProperty}"`;
      case 'required':
        return `${where} is missing required field "${(e.params as { missingProperty: string }).missingProperty}"`;
      case 'enum':
        return `${where} must be one of: ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
      default:
        return `${where} ${e.message ?? 'is invalid'}`;
    }
  });
  return [...new Set(parts)].join('; ');
}

/** A caller's value in a message, cut short: it may be as large as the body. */
function quote(value: string): string {
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
}

/**
 * preValidation hook of routes whose body is optional (old clients send none): an absent body is
 * validated as `{}`, while any body that is sent is held to the route's schema.
 */
export async function absentBodyAsEmpty(req: { body: unknown }): Promise<void> {
  if (req.body === undefined) req.body = {};
}
