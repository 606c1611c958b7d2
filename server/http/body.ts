// How request input is read: bodies are JSON only (an empty body is no body), validated
// without coercion and with unknown fields rejected; query strings and path parameters are
// text, so they are coerced. At most 64 KiB of body. Validators and response serializers are
// compiled on first use, not at start.
import type { FastifyInstance, FastifySchemaCompiler } from 'fastify';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import { ApiError } from '../contract/errors.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export const BODY_LIMIT = 64 * 1024;

type Validate = ReturnType<FastifySchemaCompiler<object>>;

// fastify compiles every route's schemas before it listens; compiled on first use instead, a
// start pays only for the routes its first requests reach (measured: bench/startup.ts). fastify
// reads `.errors` from the function it was given, so the wrapper copies them from the compiled
// one after each call.
function lazyValidator(compile: () => Validate): Validate {
  let compiled: Validate | undefined;
  const validate: Validate = (data) => {
    compiled ??= compile();
    const ok = compiled(data);
    validate.errors = compiled.errors;
    return ok;
  };
  validate.errors = null;
  return validate;
}

function validatorCompiler() {
  let ajv: { body: Ajv; text: Ajv } | undefined;
  const instances = () => {
    if (ajv) return ajv;
    // Bodies: no coercion, every error reported, unknown fields rejected (not silently removed).
    const body = new Ajv({ allErrors: true, coerceTypes: false, removeAdditional: false, useDefaults: true, strict: false });
    // Query strings and path parameters arrive as text: coerce them.
    const text = new Ajv({ allErrors: true, coerceTypes: true, removeAdditional: false, useDefaults: true, strict: false });
    addFormats(body);
    addFormats(text);
    return (ajv = { body, text });
  };
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) =>
    lazyValidator(() => (httpPart === 'body' ? instances().body : instances().text).compile(schema) as Validate);
}

// The response serializers (fast-json-stringify), likewise built on first use.
function lazySerializers() {
  const build = SerializerSelector()(undefined, {}) as (route: { schema: object }) => (data: unknown) => string;
  return (route: { schema: object }) => {
    let serialize: ((data: unknown) => string) | undefined;
    return (data: unknown) => (serialize ??= build(route))(data);
  };
}

export function installBodyParsing(app: FastifyInstance): void {
  app.setValidatorCompiler(validatorCompiler());
  app.setSerializerCompiler(lazySerializers());
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
