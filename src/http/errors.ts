import type { FastifyError, FastifyInstance } from 'fastify';
import type { ErrorObject } from 'ajv';
import { WeftError, type ErrorBody, type ErrorCode } from '../protocol/errors.js';
import { DefinitionError } from '../definitions/index.js';
import { StoreUnavailableError } from '../store/index.js';
import { describeValidationErrors } from './validation.js';

/** docs/api.md "Errors": every non-2xx is JSON {error, message} plus optional detail fields (docs/protocol.md). */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setNotFoundHandler((req, reply) => {
    void reply.code(404).send({
      error: 'not_found',
      message: `no route for ${req.method} ${req.url.split('?')[0]}; see the API reference in the README`,
    } satisfies ErrorBody);
  });

  app.setErrorHandler((err: FastifyError | WeftError | DefinitionError | Error, req, reply) => {
    if (err instanceof WeftError) {
      return reply.code(err.status).send(err.toBody());
    }
    if (err instanceof StoreUnavailableError) {
      // Expected while the database restarts, and workers retry on 503 by themselves:
      // one line without a stack, since an outage produces many.
      req.log.warn({ method: req.method, url: req.url, reason: err.message }, 'store unavailable; answered 503');
      return reply
        .code(503)
        .header('retry-after', '1')
        .send({ error: 'store_unavailable', message: `${err.message}; try again shortly` } satisfies ErrorBody);
    }
    if (err instanceof DefinitionError) {
      return reply.code(400).send({ error: 'invalid_workflow', message: err.message, issues: err.issues } satisfies ErrorBody);
    }
    const fe = err as FastifyError;
    if (fe.validation) {
      const part = fe.validationContext ?? 'body';
      return reply.code(400).send({
        error: 'invalid_request',
        message: describeValidationErrors(part, fe.validation as ErrorObject[]),
      } satisfies ErrorBody);
    }
    const status = fe.statusCode ?? 500;
    if (status === 413) {
      return reply
        .code(413)
        // A route may take less than the server's limit (a webhook: README "Webhooks").
        .send({ error: 'payload_too_large', message: `request body is larger than the ${req.routeOptions.bodyLimit ?? app.initialConfig.bodyLimit} byte limit` } satisfies ErrorBody);
    }
    if (status >= 400 && status < 500) {
      return reply.code(status).send({ error: codeFor(fe), message: fe.message } satisfies ErrorBody);
    }
    req.log.error({ err }, 'request failed');
    return reply.code(500).send({ error: 'internal', message: 'internal server error; the server log has the details' } satisfies ErrorBody);
  });
}

function codeFor(err: FastifyError): ErrorCode {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'unsupported_media_type';
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'invalid_json';
    default:
      return 'bad_request';
  }
}
