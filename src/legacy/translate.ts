import type { Context } from 'hono';
import { LegacyError } from '../http/legacy-error.js';
import { legacyLinkOrigin } from '../http/public-url.js';
import type { RunInput, RunResult } from '../mapping/executor.js';
import type { AppEnv } from '../services.js';

/**
 * The bridge from legacy handlers to the mapping engine: a handler names its operation id and
 * hands over validated input; the live profile's operation table decides what happens. The
 * successor calls add to the request's counter (none in shadow mode's background translation).
 */
export function runMapped(c: Context<AppEnv>, operationId: string, input: RunInput): Promise<RunResult> {
  return c.get('services').mappings.current().run(operationId, input, c.get('calls'));
}

/**
 * A result of another type than the handler takes. A served profile cannot answer one: it is
 * checked against each operation's `answer` when it loads; this holds for one loaded without them.
 */
export function mismatch(operationId: string, result: RunResult, wanted: RunResult['type']): LegacyError {
  return new LegacyError(
    500,
    `The operation table of ${operationId} answers "${result.type}", but the legacy operation needs "${wanted}"; fix its "result" in the mapping profile`,
  );
}

/** Runs an operation whose result is one entity. */
export async function mappedEntity(
  c: Context<AppEnv>,
  operationId: string,
  input: RunInput,
): Promise<{ id: string | null; value: Record<string, unknown> }> {
  const result = await runMapped(c, operationId, input);
  if (result.type !== 'entity') throw mismatch(operationId, result, 'entity');
  return result;
}

/** Runs an operation whose result is a list of entities. */
export async function mappedList(
  c: Context<AppEnv>,
  operationId: string,
  input: RunInput,
): Promise<Record<string, unknown>[]> {
  const result = await runMapped(c, operationId, input);
  if (result.type !== 'collection') throw mismatch(operationId, result, 'collection');
  return result.value;
}

/** Runs an operation whose result is an object mapped from the successor's answer. */
export async function mappedObject(
  c: Context<AppEnv>,
  operationId: string,
  input: RunInput,
): Promise<Record<string, unknown>> {
  const result = await runMapped(c, operationId, input);
  if (result.type !== 'object') throw mismatch(operationId, result, 'object');
  return result.value;
}

/** Runs an operation that answers nothing (204). */
export async function mappedNone(c: Context<AppEnv>, operationId: string, input: RunInput): Promise<void> {
  const result = await runMapped(c, operationId, input);
  if (result.type !== 'none') throw mismatch(operationId, result, 'none');
}

/** The `Location` of an entity created by a POST to the current collection path (`legacyLinkOrigin`). */
export function locationOf(c: Context<AppEnv>, legacyId: string): string {
  return `${legacyLinkOrigin(c)}${c.req.path.replace(/\/+$/, '')}/${encodeURIComponent(legacyId)}`;
}
