// How request input is read: bodies are JSON only (an empty body is no body), validated
// without coercion and with unknown fields rejected; query strings and path parameters are
// text, so they are coerced. At most 64 KiB of body.
import type { FastifyInstance } from 'fastify';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { ApiError } from '../contract/errors.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export const BODY_LIMIT = 64 * 1024;

function validatorCompiler() {
  // Bodies: no coercion, every error reported, unknown fields rejected (not silently removed).
  const bodyAjv = new Ajv({ allErrors: true, coerceTypes: false, removeAdditional: false, useDefaults: true, strict: false });
  // Query strings and path parameters arrive as text: coerce them.
  const textAjv = new Ajv({ allErrors: true, coerceTypes: true, removeAdditional: false, useDefaults: true, strict: false });
  addFormats(bodyAjv);
  addFormats(textAjv);
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) =>
    (httpPart === 'body' ? bodyAjv : textAjv).compile(schema);
}

export function installBodyParsing(app: FastifyInstance): void {
  app.setValidatorCompiler(validatorCompiler());
  // Bodies are JSON only; an empty body counts as no body (PATCH pause/resume send none).
  // fastify tests the regular expression against the whole header, parameters included
  // (`application/json; charset=utf-8`), so they are allowed after the media type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(/^application\/([a-z0-9.+-]*\+)?json(\s*;.*)?$/i, { parseAs: 'string' }, (_req, body, done) => {
    const text = (body as string).trim();
    if (text === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new ApiError('invalid_request', 'The request body is not valid JSON.', { location: 'body' }), undefined);
    }
  });
}
